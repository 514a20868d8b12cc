"""Read a host TOML file into data, with an error that points at the line."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from gpuconf.node.runtimes.host import HostPathError


def parse_toml(host_path: str, data: bytes | None) -> dict[str, Any]:
    """The file's tables; {} for a missing or empty file. Raises HostPathError on anything else."""
    if data is None:
        return {}
    try:
        return tomllib.loads(data.decode())
    except UnicodeDecodeError:
        raise HostPathError(f"{host_path}: not UTF-8 text; left untouched") from None
    except tomllib.TOMLDecodeError as error:
        found = re.search(r"\(at line (\d+), column (\d+)\)", str(error))
        where = f":{found[1]}:{found[2]}" if found else ""
        raise HostPathError(
            f"{host_path}{where}: not valid TOML ({error}); left untouched"
        ) from None
