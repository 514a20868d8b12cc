"""Read a host TOML file into data, with an error that points at the line; and reach into it
only where the engine's own reader would (a value of the wrong type is refused by key path)."""

from __future__ import annotations

import datetime
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


def table_at(host_path: str, document: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The table at key path ``keys`` ({} where a part is absent). A value on the way that is
    not a table is refused by its key path: the engine cannot read that file either."""
    table = document
    for depth, key in enumerate(keys):
        value = table.get(key, {})
        if not isinstance(value, dict):
            raise wrong_type(host_path, keys[: depth + 1], value, "a table")
        table = value
    return table


def string_at(host_path: str, table: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    """The string at ``keys[-1]`` of ``table`` (which sits at ``keys[:-1]``); None when absent."""
    value = table.get(keys[-1])
    if value is not None and not isinstance(value, str):
        raise wrong_type(host_path, keys, value, "a string")
    return value


def wrong_type(host_path: str, keys: tuple[str, ...], value: object, wanted: str) -> HostPathError:
    return HostPathError(
        f"{host_path}: `{'.'.join(keys)}` is {_kind(value)}, not {wanted}, which its program "
        "cannot read either; left untouched"
    )


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.date | datetime.time):
        return "a date or time"
    return "a value"
