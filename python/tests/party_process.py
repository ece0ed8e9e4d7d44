"""One party in its own Python process, for the tests that need two processes.

Usage: python party_process.py '<json spec>'. The spec names the class
(e.g. "PiSum.p1"), its positional and keyword arguments, and run()'s keyword arguments
(``tls`` as [ca, cert, key]), and optionally ``save_signatures``, a path where an APSI
authorize client saves its signatures. Prints the result's RESULT.json (plus the rows of a set
operation) or {"error": class name, "message": ...} as the last line of stdout.
"""

from __future__ import annotations

import json
import sys

import privset


def main() -> None:
    spec = json.loads(sys.argv[1])
    namespace, role = spec["party"].split(".")
    party = getattr(getattr(privset, namespace), role)(*spec.get("args", []), **spec.get("kwargs", {}))
    run = dict(spec.get("run", {}))
    if run.get("tls") is not None:
        run["tls"] = privset.TlsFiles(*run["tls"])
    try:
        result = party.run(**run)
    except privset.PrivsetError as e:
        print(json.dumps({"error": type(e).__name__, "message": str(e)}))
        return
    out = result.to_dict()
    if spec.get("save_signatures"):
        result.signatures.save(spec["save_signatures"])
    for rows in ("intersection", "union"):
        if getattr(result, rows, None) is not None:
            out[rows] = getattr(result, rows)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
