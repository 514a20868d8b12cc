"""Which release of an engine the host runs, asked of its own binary (`containerd --version`)."""

from __future__ import annotations

import re

from gpuconf.node.runtimes.host import Host

Version = tuple[int, int, int]

_RELEASE = re.compile(r"(?<![\w.])v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version | None:
    """The first x.y.z release in a `--version` line: `containerd … 1.6.20~ds1`, `k3s version v1.31.6+k3s1`."""
    found = _RELEASE.search(text)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def engine_version(host: Host, program: str) -> Version | None:
    """``program --version`` on the host; None when it is not installed or does not say."""
    result = host.run([program, "--version"])
    if result is None or result.returncode != 0:
        return None
    return parse_version(result.stdout + result.stderr)


def shown(version: Version | None) -> str:
    return "unknown" if version is None else ".".join(map(str, version))
