"""GPUs waiting for a reset, kept in a file so a restarted `gpuconf node run` keeps them withheld.

The file lives under /run (tmpfs): a node reboot, which resets every GPU, empties it. A GPU
reset while the runtime was stopped is not visible to NVML afterwards; remove its UUID from
the file (or the file) once the GPU has been reset.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpuconf.node.atomic_files import write_atomically
from gpuconf.node.small_files import NotAStateFile, read_json_state

STATE_FILE = "awaiting-reset.json"


class StateUnreadable(Exception):
    pass


def load(path: Path) -> frozenset[str]:
    try:
        data = read_json_state(path)
    except NotAStateFile as error:
        raise StateUnreadable(str(error)) from None
    if data is None:
        return frozenset()
    uuids = data.get("awaitingReset") if isinstance(data, dict) else None
    if not isinstance(uuids, list) or not all(isinstance(u, str) for u in uuids):
        raise StateUnreadable(f'{path}: expected {{"awaitingReset": ["GPU-…", …]}}')
    return frozenset(uuids)


def save(path: Path, uuids: frozenset[str]) -> None:
    """Atomically: a crash mid-write leaves the old file, never half a file."""
    write_atomically(path, (json.dumps({"awaitingReset": sorted(uuids)}, indent=1) + "\n").encode())
