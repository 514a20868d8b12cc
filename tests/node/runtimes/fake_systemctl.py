"""A host `systemctl` that keeps each unit's state the way systemd reports it.

`restart --no-block UNIT` queues a restart and returns; `show --property=… UNIT` prints
`Property=value` lines with CLOCK_MONOTONIC microsecond timestamps (org.freedesktop.systemd1(5)).
The test steers a unit with files in ``units/``: `UNIT.slow` holds it in activating after a
restart, `UNIT.fails` makes its start fail, `UNIT.restarts` gives it `Restart=` (as containerd's,
docker's and k3s's units have), so that a failed start shows as activating/auto-restart, not
failed (systemd.service(5)), and `restart-refused` makes systemctl refuse the job.
Every call is appended to ``systemctl-calls``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from builders import HostTree

_SCRIPT = """
import json, sys, time
from pathlib import Path

units = Path(sys.argv[1])
args = sys.argv[2:]
with open(units.parent / "systemctl-calls", "a") as calls:
    calls.write(" ".join(args) + "\\n")
unit = args[-1]
state_file = units / (unit + ".json")
state = json.loads(state_file.read_text()) if state_file.exists() else {}
now = int(time.monotonic() * 1e6)
if args[0] == "restart":
    if (units / "restart-refused").exists():
        print("Job for " + unit + ".service failed.", file=sys.stderr)
        sys.exit(1)
    state = {"restarted": now}
elif args[0] == "show":
    restarted = state.get("restarted")
    if restarted is not None and "entered" not in state and not (units / (unit + ".slow")).exists():
        state["entered"] = now
        state["failed"] = (units / (unit + ".fails")).exists()
        state["restarts"] = (units / (unit + ".restarts")).exists()
    if restarted is None:
        active, sub, result, entered, exited, stopped = "active", "running", "success", 1000000, 1000000, 0
    elif "entered" not in state:
        active, sub, result, entered, exited, stopped = "activating", "start", "success", 0, restarted, restarted
    elif state["failed"] and state["restarts"]:  # systemd >= 254: dead, then auto-restart
        active, sub, result, entered, exited, stopped = "activating", "auto-restart", "exit-code", 0, state["entered"], state["entered"]
    elif state["failed"]:
        active, sub, result, entered, exited, stopped = "failed", "failed", "exit-code", 0, restarted, state["entered"]
    else:
        active, sub, result, entered, exited, stopped = "active", "running", "success", state["entered"], restarted, restarted
    print(f"ActiveState={active}\\nSubState={sub}\\nResult={result}")
    print(f"ActiveEnterTimestampMonotonic={entered}\\nInactiveExitTimestampMonotonic={exited}")
    print(f"InactiveEnterTimestampMonotonic={stopped}")
state_file.write_text(json.dumps(state))
"""


def install(host: HostTree) -> Path:
    """Install the fake on ``host``; returns the folder of unit switches."""
    units = host.folder / "units"
    units.mkdir(exist_ok=True)
    script = host.folder / "fake_systemctl.py"
    script.write_text(_SCRIPT)
    host.program("systemctl", f'exec {sys.executable} {script} {units} "$@"')
    return units


def restarts(host: HostTree) -> list[str]:
    calls = host.folder / "systemctl-calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return [line for line in lines if line.startswith("restart")]


def show(host: HostTree, unit: str) -> str:
    """What `systemctl show UNIT` says now (as systemd would, also moving the fake's state on)."""
    systemctl = host.at("/usr/local/bin/systemctl")
    return subprocess.run(
        [str(systemctl), "show", unit], capture_output=True, text=True, check=True
    ).stdout
