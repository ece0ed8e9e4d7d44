"""One organisation of a privset.ray test: its own Ray cluster on this machine (a head
node and one worker node, one CPU each, so tasks run on both nodes), then the
privset.ray function the spec names; prints RESULT.json's fields as JSON on stdout.

The spec (JSON, argv[1]): ``operation`` (a privset.ray function's name), ``role``,
``input``, ``state_dir``, ``settings`` (its other keyword arguments) and the link:
``exchange_dir``, or ``tls_dir`` (the certificates, this role's among them) with
``listen`` / ``peer`` among the settings; ``env``: environment variables for its tasks."""

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
# The tests' fault hook reaches the bucket tasks through their environment.
ray.init(address=cluster.address, log_to_driver=False, runtime_env={"env_vars": spec.get("env", {})})
run = getattr(privset.ray, spec["operation"])
link = {}
if "exchange_dir" in spec:
    link["exchange_dir"] = spec["exchange_dir"]
else:
    link["tls"] = privset.TlsFiles.in_dir(spec["tls_dir"], spec["role"])
result = run(
    spec["role"],
    spec["input"],
    state_dir=spec["state_dir"],
    **link,
    id_column="id",
    timeout=120,
    poll_interval=0.01,
    **spec["settings"],
)
ray.shutdown()
cluster.shutdown()
print(json.dumps(result))
