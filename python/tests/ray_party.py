"""One organisation of a privset.ray test: its own local Ray cluster (a head node in this
process), then privset.ray.psi; prints RESULT.json's fields as JSON on stdout."""

from __future__ import annotations

import json
import sys

import ray

import privset

spec = json.loads(sys.argv[1])
ray.init(address="local", num_cpus=2, object_store_memory=100 << 20, include_dashboard=False, log_to_driver=False)
result = privset.ray.psi(
    spec["role"],
    spec["input"],
    id_column="id",
    exchange_dir=spec["exchange_dir"],
    state_dir=spec["state_dir"],
    output_rows=spec.get("output_rows"),
    buckets=spec["buckets"],
    group="x25519",
    timeout=120,
    poll_interval=0.01,
)
ray.shutdown()
print(json.dumps(result))
