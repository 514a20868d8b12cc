"""k3s's own config drop-ins: does one that loads after ours set `default-runtime` back?

k3s reads /etc/rancher/k3s/config.yaml, then every `*.yaml`/`*.yml` file in config.yaml.d in
lexical order (Go's os.ReadDir), folding every entry in turn (k3s-io/k3s pkg/configfilearg/
parser.go, `dotDFiles` and `readConfigFile`): one trailing `+` is stripped from each key, a plain
key replaces the value so far and a `+` key appends to it. A slice goes to k3s's string flag as
one `--default-runtime=` per element, the last winning. If what later files fold over our
90-gpuconf-nvidia.yaml ends on another runtime, pods would run without the nvidia runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import yaml

from gpuconf.api.runtime_files import K3S_AGENT_CONFIG_DROPIN, RUNTIME_NAME
from gpuconf.node.runtimes.changes import current
from gpuconf.node.runtimes.host import Host, HostPathError

DEFAULT_RUNTIME_KEY = "default-runtime"
_SUFFIXES = (".yaml", ".yml")
_NULL_TAG = "tag:yaml.org,2002:null"


def later_dropins(host: Host) -> list[str]:
    """The drop-ins k3s reads after ours, in its order."""
    ours = PurePosixPath(K3S_AGENT_CONFIG_DROPIN)
    try:
        entries = list(host.path(str(ours.parent)).iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = sorted(
        entry.name.encode()
        for entry in entries
        # os.ReadDir's IsDir (dotDFiles) does not follow links: a link to a folder is a file.
        if (entry.is_symlink() or not entry.is_dir()) and entry.name.lower().endswith(_SUFFIXES)
    )
    return [str(ours.parent / name.decode()) for name in names if name > ours.name.encode()]


def _entries(host_path: str, text: str) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
    """The file's top-level entries as k3s reads them: YAML 1.1 into a yaml.v2 MapSlice
    (pkg/configfilearg parser.go readConfigFile), repeated keys kept in order; an empty or
    comment-only file has none. Not gpuconf's own loader, which refuses what k3s takes."""
    try:
        root = yaml.compose(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as error:
        raise HostPathError(
            f"{host_path}: not YAML k3s can read ({error}); k3s reads it after "
            f"{K3S_AGENT_CONFIG_DROPIN} and setup cannot tell whether it sets default-runtime"
        ) from None
    if root is None:
        return []
    if not isinstance(root, yaml.MappingNode):
        raise HostPathError(
            f"{host_path}: not a mapping of settings, which k3s refuses too (k3s reads it after "
            f"{K3S_AGENT_CONFIG_DROPIN})"
        )
    return [(key, value) for key, value in root.value if isinstance(key, yaml.ScalarNode)]


@dataclass(frozen=True)
class _Setting:
    """One value k3s holds for `default-runtime`: its text (None for YAML's null) and the
    `file:line:col: key` of the entry that set it."""

    text: str | None
    at: str


def _to_slice(held: _Setting | list[_Setting]) -> list[_Setting]:
    """toSlice in pkg/configfilearg/parser.go: a slice stays, a null adds nothing, any other
    value is one element."""
    if isinstance(held, list):
        return held
    return [] if held.text is None else [held]


def _setting(at: str, node: yaml.Node, text: str) -> _Setting:
    if not isinstance(node, yaml.ScalarNode):
        # convert.ToString of a map is never "nvidia": shown as the file writes it.
        return _Setting(" ".join(text[node.start_mark.index : node.end_mark.index].split()), at)
    return _Setting(None if node.tag == _NULL_TAG else node.value, at)


def _fold(
    held: _Setting | list[_Setting], at: str, key: str, value: yaml.Node, text: str
) -> _Setting | list[_Setting]:
    """readConfigFile's fold for one entry: k3s strips one trailing `+`; a `+` key appends to the
    value held so far, a plain key replaces it."""
    given: _Setting | list[_Setting] = (
        [_setting(at, item, text) for item in value.value]
        if isinstance(value, yaml.SequenceNode)
        else _setting(at, value, text)
    )
    return _to_slice(held) + _to_slice(given) if key.endswith("+") else given


def _final(held: _Setting | list[_Setting], at: str) -> _Setting:
    """The value the `--default-runtime` string flag ends with: k3s passes a slice as one flag
    per element, and the last wins; an empty slice passes none (k3s's default, no runtime)."""
    if isinstance(held, list):
        return held[-1] if held else _Setting(None, at)
    return held


def refuse_a_later_default_runtime(host: Host) -> None:
    """HostPathError naming the entry that sets the `default-runtime` k3s ends with, if that is
    not nvidia, folding every later drop-in over ours as k3s does."""
    held: _Setting | list[_Setting] = _Setting(RUNTIME_NAME, K3S_AGENT_CONFIG_DROPIN)
    last_at = K3S_AGENT_CONFIG_DROPIN
    for host_path in later_dropins(host):
        _, data = current(host, host_path)
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        for key, value in _entries(host_path, text):
            if key.value.removesuffix("+") != DEFAULT_RUNTIME_KEY:
                continue
            line, column = key.start_mark.line + 1, key.start_mark.column + 1
            last_at = f"{host_path}:{line}:{column}: {key.value}"
            held = _fold(held, last_at, key.value, value, text)
    final = _final(held, last_at)
    if final.text != RUNTIME_NAME:
        raise HostPathError(
            f"{final.at}: {final.text or ''!r} wins "
            f"over {K3S_AGENT_CONFIG_DROPIN} (k3s reads config.yaml.d in lexical order, the "
            "last value kept), so pods would not run with the nvidia runtime; remove it "
            "there, or rename the file to sort before 90-gpuconf-nvidia.yaml"
        )
