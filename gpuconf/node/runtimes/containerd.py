"""containerd: a drop-in that makes `nvidia` a CRI runtime, in the way the host's containerd merges it.

What the real binaries showed (DESIGN §5, facts/runtimes):
- containerd 1.x replaces a whole top-level plugin table with the last imported file that has
  it (2.0 deep-merges), so a version-2 drop-in carries the host's whole CRI table.
- containerd 2.0–2.2 ignores (or half-migrates) a drop-in whose config version differs from
  the main file's, and 1.x silently ignores a version-3 drop-in: the drop-in always takes the
  main file's version.
- A runtime without runc's options (SystemdCgroup above all) puts pods outside kubepods.slice:
  the nvidia runtime starts as a copy of the host's runc-type runtime.
- Files load breadth first (services/server/config: `LoadConfig` queues each file's imports
  behind those already queued; `resolveImports` globs an entry only when it holds `*`, with
  Go's filepath.Glob, folder parts included). A relative entry is joined to the importing
  file's folder, a relative glob too from 1.6.29, 1.7.16 and 2.0 on (containerd commit
  0f2068a7); before, a relative glob matched from the daemon's working directory, /. A plain
  entry naming a missing file stops containerd starting: setup refuses such a host.
- A file that loads after the drop-in overrides it: on 1.x any file with the CRI table
  replaces it, nvidia and all; on 2.x (deep merge) one that sets one of the drop-in's own
  settings otherwise. Setup refuses both, naming the file.
"""

from __future__ import annotations

import copy
import fnmatch
import logging
import tomllib
from pathlib import PurePosixPath
from typing import Any

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import (
    CONTAINERD_CONFIG,
    CONTAINERD_DROPIN,
    CONTAINERD_DROPIN_GLOB,
    RUNTIME_NAME,
)
from gpuconf.formats import toml_writer
from gpuconf.node.runtimes.changes import MAX_HOST_FILE_BYTES, FileChange, current, too_large
from gpuconf.node.runtimes.containerd_imports import (
    ImportsEditError,
    ensure_imported,
    new_main_config,
)
from gpuconf.node.runtimes.host import Host, HostPathError
from gpuconf.node.runtimes.toml_files import parse_toml, string_at, table_at
from gpuconf.node.runtimes.versions import Version, engine_version, shown

log = logging.getLogger(__name__)

RUNC_SHIM = "io.containerd.runc.v2"
CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"]
_CRI_RUNTIME_PLUGIN = {2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
# containerd follows imports without limit; setup reads at most this many imported files.
_MAX_IMPORTED_FILES = 256


def cri_runtime_plugin(config_version: int) -> str:
    return _CRI_RUNTIME_PLUGIN[min(config_version, 3)]


def native_config_version(binary: Version) -> int:
    """The version `containerd config default` writes: 2 for 1.x, 3 for 2.0–2.2, 4 from 2.3."""
    return 2 if binary < (2, 0, 0) else 3 if binary < (2, 3, 0) else 4


def plan(settings: RuntimeSettings, host: Host) -> list[FileChange]:
    main_path, main_old = current(host, CONTAINERD_CONFIG)
    main = parse_toml(CONTAINERD_CONFIG, main_old)
    binary = engine_version(host, "containerd")
    version = config_version(settings, main, main_old is not None, binary)
    order = load_order(host, main, globs_from_importer(binary), len(main_old or b""))
    plugin = cri_runtime_plugin(version)
    for path, table in order:
        if table is not None:
            _check_cri_shape(path, table, plugin)
    # 2.x merges a version-2 file as it merges a version-3 one; an unknown binary may be 1.x.
    replaced = version == 2 and (binary is None or binary < (2, 0, 0))
    tables = [table for _, table in order if table is not None]
    effective = effective_plugin_table(tables, plugin, replaced=replaced)
    runtimes = effective.get("containerd", {}).get("runtimes", {})
    built_in_runc = None if "runc" in runtimes else default_runc(host)
    dropin = dropin_tables(settings, version, effective, binary, built_in_runc)
    ours = _set_by_dropin(dropin["plugins"][plugin], effective)
    _refuse_overrides_after_dropin(order, plugin, ours, replaced=replaced)
    dropin_path, dropin_old = current(host, CONTAINERD_DROPIN)
    dropin_new = toml_writer.dumps(dropin).encode()
    return [
        FileChange(CONTAINERD_DROPIN, dropin_path, dropin_old, dropin_new),
        FileChange(CONTAINERD_CONFIG, main_path, main_old, _main_with_import(main_old, version)),
    ]


def _check_cri_shape(host_path: str, document: dict[str, Any], plugin: str) -> None:
    """Every table setup reads from the CRI plugin is one (containerd refuses the file otherwise:
    "Can't convert 1(int64) to map[string]toml.Tree(map)")."""
    containerd = ("plugins", plugin, "containerd")
    string_at(
        host_path, table_at(host_path, document, containerd), (*containerd, "default_runtime_name")
    )
    for name in table_at(host_path, document, (*containerd, "runtimes")):
        table_at(host_path, document, (*containerd, "runtimes", name, "options"))


def config_version(
    settings: RuntimeSettings, main: dict[str, Any], main_exists: bool, binary: Version | None
) -> int:
    """The config version the drop-in must use: the main file's; for a main file setup creates,
    the one the host's binary writes itself (`containerd config default`: 2 on 1.x, 3 on
    2.0-2.2, 4 from 2.3), which it reads without migrating; the pool's containerdConfigVersion
    only when the binary cannot be asked (it may be stale: a node upgraded, or a 1.x node in a
    pool declared 3, which 1.x cannot read); else 2, which every release reads."""
    declared = settings.containerd_config_version
    if main_exists and "version" in main:
        version = main["version"]
        if not isinstance(version, int) or isinstance(version, bool):
            raise HostPathError(f"{CONTAINERD_CONFIG}: `version` is not a number; left untouched")
    elif main_exists and main.get("plugins"):
        version = 1
    elif binary is not None:
        version = native_config_version(binary)
        if declared is not None and declared != version:
            log.warning(
                "containerd %s writes config version %d; the pool declares %d: creating %s "
                "in version %d",
                shown(binary), version, declared, CONTAINERD_CONFIG, version,
            )  # fmt: skip
    else:
        version = 2 if declared is None else declared
    if version < 2:
        raise HostPathError(
            f"{CONTAINERD_CONFIG}: config version 1 (short plugin names) is not supported; "
            "migrate it first (`containerd config migrate` on containerd 2, or set "
            "version = 2 and full plugin names)"
        )
    if binary is not None and version > native_config_version(binary):
        raise HostPathError(
            f"{CONTAINERD_CONFIG}: config version {version} is newer than containerd "
            f"{shown(binary)} reads (at most {native_config_version(binary)}); left untouched"
        )
    return int(version)


def effective_plugin_table(
    tables: list[dict[str, Any]], plugin: str, *, replaced: bool
) -> dict[str, Any]:
    """The host's table for ``plugin`` over the main file and its imports, in load order.

    ``replaced``: containerd 1.x semantics, the last file that has the table wins it whole;
    else 2.x's, every file deep-merged over the ones before."""
    effective: dict[str, Any] = {}
    for table in tables:
        own = table.get("plugins", {}).get(plugin)
        if not isinstance(own, dict):
            continue
        effective = copy.deepcopy(own) if replaced else deep_merged(effective, own)
    return effective


def deep_merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merged(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def default_runc(host: Host) -> dict[str, Any] | None:
    """runc as the host's containerd declares it when no file does (`containerd config default`)."""
    result = host.run(["containerd", "config", "default"])
    if result is None or result.returncode != 0:
        return None
    try:
        plugins = tomllib.loads(result.stdout).get("plugins", {})
    except tomllib.TOMLDecodeError:
        return None
    for plugin in (_CRI_RUNTIME_PLUGIN[3], _CRI_RUNTIME_PLUGIN[2]):
        runc = plugins.get(plugin, {}).get("containerd", {}).get("runtimes", {}).get("runc")
        if isinstance(runc, dict):
            return runc
    return None


def dropin_tables(
    settings: RuntimeSettings,
    version: int,
    effective: dict[str, Any],
    binary: Version | None,
    built_in_runc: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The drop-in as data: for version 2 the whole effective CRI table with nvidia added.

    ``built_in_runc``: runc as containerd declares it by itself, when no host file does."""
    containerd_effective = copy.deepcopy(effective.get("containerd", {}))
    if built_in_runc is not None:
        containerd_effective.setdefault("runtimes", {}).setdefault("runc", built_in_runc)
    nvidia = nvidia_runtime(settings, containerd_effective)
    if version == 2:
        cri = copy.deepcopy(effective)
        containerd = cri.setdefault("containerd", {})
        runtimes = containerd.setdefault("runtimes", {})
        default_name = containerd.get("default_runtime_name", "runc")
        if default_name == "runc" and "runc" not in runtimes:
            # Declaring any runtime replaces containerd 1.x's built-in list, runc included.
            runtimes["runc"] = copy.deepcopy(built_in_runc or {"runtime_type": RUNC_SHIM})
    else:
        cri = {}
        containerd = cri.setdefault("containerd", {})
        runtimes = containerd.setdefault("runtimes", {})
    runtimes[RUNTIME_NAME] = nvidia
    if settings.set_as_default:
        containerd["default_runtime_name"] = RUNTIME_NAME
    if settings.enable_cdi:
        _enable_cdi(cri, version, effective, binary)
    return {"version": version, "plugins": {cri_runtime_plugin(version): cri}}


def nvidia_runtime(settings: RuntimeSettings, containerd: dict[str, Any]) -> dict[str, Any]:
    """A copy of the runc-type runtime pods use today, running nvidia-container-runtime instead."""
    runtime = copy.deepcopy(base_runtime(containerd))
    runtime["runtime_type"] = RUNC_SHIM
    options = runtime.get("options")
    runtime["options"] = {**(options if isinstance(options, dict) else {})}
    runtime["options"]["BinaryName"] = settings.binary_path
    return runtime


def base_runtime(containerd: dict[str, Any]) -> dict[str, Any]:
    """The host's default runtime when it is a runc-type one (not nvidia), else runc, else crun."""
    runtimes = containerd.get("runtimes", {})
    if not isinstance(runtimes, dict):
        return {}
    default = containerd.get("default_runtime_name", "runc")
    for name in (default, "runc", "crun"):
        runtime = runtimes.get(name)
        if (
            isinstance(runtime, dict)
            and not str(name).startswith(RUNTIME_NAME)
            and runtime.get("runtime_type", RUNC_SHIM) in (RUNC_SHIM, "")
        ):
            return runtime
    return {}


def _enable_cdi(
    cri: dict[str, Any], version: int, effective: dict[str, Any], binary: Version | None
) -> None:
    if version == 2:
        if binary is not None and binary < (1, 7, 0):
            raise HostPathError(
                f"containerd {shown(binary)} has no CDI support (it came in 1.7); upgrade "
                "containerd or use the envvar or volume-mounts device list strategy"
            )
        if binary is None:
            log.warning(
                "containerd version unknown: CDI needs 1.7 or later, which reads enable_cdi"
            )
        cri["enable_cdi"] = True
        cri.setdefault("cdi_spec_dirs", CDI_SPEC_DIRS)
    elif effective.get("enable_cdi") is False:
        cri["enable_cdi"] = True  # on by default in containerd 2; only a host that turned it off


def _main_with_import(old: bytes | None, version: int) -> bytes:
    if old is None:
        return new_main_config(version, CONTAINERD_DROPIN_GLOB).encode()
    try:
        return ensure_imported(old.decode(), CONTAINERD_DROPIN_GLOB).encode()
    except ImportsEditError as error:
        raise HostPathError(
            f"{CONTAINERD_CONFIG}: {error}; left untouched "
            f"(add {CONTAINERD_DROPIN_GLOB!r} to imports by hand)"
        ) from None


def globs_from_importer(binary: Version | None) -> bool:
    """Whether a relative glob is matched in the importing file's folder (else in /); an
    unknown binary is taken to be a current release."""
    if binary is None or binary >= (2, 0, 0):
        return True
    return binary >= ((1, 7, 16) if binary >= (1, 7, 0) else (1, 6, 29))


def load_order(
    host: Host, main: dict[str, Any], relative_globs_from_importer: bool, main_size: int = 0
) -> list[tuple[str, dict[str, Any] | None]]:
    """The files containerd loads once the main file imports our drop-in, in its order; our
    drop-in stands where it loads, with None for its table (its new text is made from the rest).
    Together they may hold at most MAX_HOST_FILE_BYTES: setup holds them all at once."""
    total = main_size
    imports = main.get("imports", [])
    imports = imports if isinstance(imports, list) else []
    if CONTAINERD_DROPIN_GLOB not in imports:
        imports = [*imports, CONTAINERD_DROPIN_GLOB]  # where ensure_imported adds it
    order: list[tuple[str, dict[str, Any] | None]] = [(CONTAINERD_CONFIG, main)]
    pending = _resolved(host, CONTAINERD_CONFIG, imports, relative_globs_from_importer)
    loaded = {CONTAINERD_CONFIG}
    while pending:
        path, pending = pending[0], pending[1:]
        if path in loaded:
            continue
        if len(order) > _MAX_IMPORTED_FILES:  # the main file and that many imports
            raise HostPathError(
                f"{CONTAINERD_CONFIG} imports more than {_MAX_IMPORTED_FILES} files; setup "
                f"cannot tell what loads after {CONTAINERD_DROPIN}; left untouched"
            )
        loaded.add(path)
        if path == CONTAINERD_DROPIN:
            order.append((path, None))
            continue
        _, data = current(host, path)
        if data is None:
            # Only a plain entry can name a missing file (a glob matches what exists), and
            # containerd fails to start on it (`failed to load TOML: … no such file`).
            raise HostPathError(
                f"{path} is imported but does not exist, so containerd would not start; "
                "left untouched (create it or remove it from imports)"
            )
        total += len(data)
        if total > MAX_HOST_FILE_BYTES:
            raise too_large(f"{CONTAINERD_CONFIG} with the files it imports", total)
        table = parse_toml(path, data)
        order.append((path, table))
        pending += _resolved(host, path, table.get("imports", []), relative_globs_from_importer)
    return order


def _resolved(host: Host, parent: str, imports: Any, globs_from_importer: bool) -> list[str]:
    """`resolveImports`: an entry with `*` is a glob (Go's filepath.Glob: sorted matches,
    folder by folder), any other relative entry is relative to the importing file's folder."""
    found: list[str] = []
    folder = PurePosixPath(parent).parent
    for entry in imports if isinstance(imports, list) else []:
        if not isinstance(entry, str):
            continue
        path = PurePosixPath(entry)
        if "*" not in entry:
            found.append(str(path if path.is_absolute() else folder / path))
            continue
        if not path.is_absolute():
            path = (folder if globs_from_importer else PurePosixPath("/")) / path
        found += _glob(host, path)
    return found


def _glob(host: Host, pattern: PurePosixPath) -> list[str]:
    """Go's filepath.Glob on the host: a folder part with a wildcard is matched first, then
    the last part in each matched folder, each folder's names in sorted order."""
    parent = pattern.parent
    folders = _glob(host, parent) if _has_wildcard(str(parent)) else [str(parent)]
    found = []
    for folder in folders:
        try:
            names = {p.name for p in host.path(folder).iterdir()}
        except (FileNotFoundError, NotADirectoryError):
            names = set()
        if PurePosixPath(folder) == PurePosixPath(CONTAINERD_DROPIN).parent:
            names.add(PurePosixPath(CONTAINERD_DROPIN).name)  # setup is about to write it
        found += [
            str(PurePosixPath(folder) / name)
            for name in sorted(names)
            if fnmatch.fnmatchcase(name, pattern.name)
        ]
    return found


def _has_wildcard(path: str) -> bool:
    return any(character in path for character in "*?[")


def _set_by_dropin(
    dropin_cri: dict[str, Any], effective: dict[str, Any]
) -> dict[tuple[str, ...], Any]:
    """The drop-in's own settings, by key path: those the host's files leave otherwise (a
    version-2 drop-in also repeats the host's whole table, which is not ours to defend)."""
    return {key: value for key, value in _leaves(dropin_cri) if _value_at(effective, key) != value}


def _refuse_overrides_after_dropin(
    order: list[tuple[str, dict[str, Any] | None]],
    plugin: str,
    ours: dict[tuple[str, ...], Any],
    *,
    replaced: bool,
) -> None:
    """A file loading after the drop-in that would undo it: on containerd 1.x (`replaced`) any
    CRI table, which replaces the drop-in's whole; on 2.x one that sets a key of `ours` otherwise."""
    paths = [path for path, _ in order]
    for path, table in order[paths.index(CONTAINERD_DROPIN) + 1 :]:
        cri = table.get("plugins", {}).get(plugin) if table is not None else None
        if not isinstance(cri, dict):
            continue
        if replaced:
            raise HostPathError(
                f"{path} loads after {CONTAINERD_DROPIN} and sets [plugins.{plugin!r}], which "
                "containerd 1.x would keep whole, dropping the nvidia runtime; move those "
                f"settings into {CONTAINERD_CONFIG} or a conf.d file named before 99-nvidia.toml"
            )
        for key, value in _leaves(cri):
            if key in ours and ours[key] != value:
                raise HostPathError(
                    f"{path} loads after {CONTAINERD_DROPIN} and sets {'.'.join(key)} in "
                    f"[plugins.{plugin!r}], overriding the nvidia runtime's; remove it there or "
                    "name the file before 99-nvidia.toml"
                )


_ABSENT = object()


def _leaves(
    table: dict[str, Any], prefix: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], Any]]:
    """Every non-table value of ``table`` with its key path (what a deep merge sets)."""
    found = []
    for key, value in table.items():
        if isinstance(value, dict):
            found += _leaves(value, (*prefix, key))
        else:
            found.append(((*prefix, key), value))
    return found


def _value_at(table: dict[str, Any], key: tuple[str, ...]) -> Any:
    node: Any = table
    for part in key:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node
