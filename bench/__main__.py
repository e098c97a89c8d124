"""Run every benchmark module (or the ones named) and print their figures.

    python -m bench                  # all
    python -m bench share_partition  # one
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path

import model


def _modules() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = argv or _modules()
    unknown = sorted(set(names) - set(_modules()))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(_modules())}")
        return 2
    print(f"build: {model.build()} ({Path(model.__file__).parent})\n")
    for name in names:
        print(f"== {name}")
        started = time.perf_counter()
        importlib.import_module(f"bench.{name}").main()
        print(f"   ({time.perf_counter() - started:.1f} s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
