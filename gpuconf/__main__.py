from __future__ import annotations

import gc

from gpuconf.cli import main

code = main()
# The process ends here. Python's last cycle collection on the way out would walk every
# object a render left (some 30 M instructions after a fleet's); frozen, they are skipped, and
# plain reference counting still frees what module teardown lets go of.
gc.freeze()
raise SystemExit(code)
