"""One organisation of a privset.ray test: its own Ray cluster on this machine (a head
node and one worker node, one CPU each, so tasks run on both nodes), then the
privset.ray function the spec names; prints RESULT.json's fields as JSON on stdout.

The spec (JSON, argv[1]): ``operation`` (a privset.ray function's name), ``role``,
``input``, ``exchange_dir``, ``state_dir`` and ``settings`` (its other keyword
arguments)."""

from __future__ import annotations

import json
import sys

import ray
from ray.cluster_utils import Cluster

import privset

spec = json.loads(sys.argv[1])
node = {"num_cpus": 1, "object_store_memory": 80 << 20}
cluster = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
cluster.add_node(**node)
ray.init(address=cluster.address, log_to_driver=False)
run = getattr(privset.ray, spec["operation"])
result = run(
    spec["role"],
    spec["input"],
    exchange_dir=spec["exchange_dir"],
    state_dir=spec["state_dir"],
    id_column="id",
    timeout=120,
    poll_interval=0.01,
    **spec["settings"],
)
ray.shutdown()
cluster.shutdown()
print(json.dumps(result))
