"""``privset`` as installed with the wheel (and ``python -m privset``).

The full command line is the Rust binary (``cargo build --release -p privset-cli``);
this entry point answers ``--version``: the package's version and which code this CPU
gets (the wheel is portable and chooses its fast paths at run time).
"""

from __future__ import annotations

import sys
from typing import List, Optional

from . import __version__, code_paths


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        print(f"privset {__version__} (Python package)")
        print(code_paths())
        return 0
    print(
        "usage: privset --version\n"
        "The protocols run from Python (import privset; docs/python.md) or from the\n"
        "privset command line built from source (cargo build --release -p privset-cli).",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
