from __future__ import annotations

from gpuconf.cli import main

raise SystemExit(main())
