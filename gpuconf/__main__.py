from __future__ import annotations

import gc

from gpuconf.cli import main


def run() -> int:
    """The command line as a program: the `gpuconf` script and `python -m gpuconf`. The process
    ends after it. Python's last cycle collection on the way out would walk every object a
    render left (some 30 M instructions after a fleet's); frozen, they are skipped, and plain
    reference counting still frees what module teardown lets go of."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    raise SystemExit(run())
