"""Notice a kubelet restart: it deletes the plugin sockets and creates a new kubelet.sock."""

from __future__ import annotations

from pathlib import Path

from gpuconf.node.kubelet.registration import KUBELET_SOCKET


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_ctime_ns)


class KubeletWatch:
    def __init__(self, plugin_dir: Path) -> None:
        self.socket = plugin_dir / KUBELET_SOCKET
        self._last = _identity(self.socket)

    def restarted(self) -> bool:
        """True once for each new kubelet.sock since the last call."""
        now = _identity(self.socket)
        changed = now is not None and now != self._last
        self._last = now
        return changed
