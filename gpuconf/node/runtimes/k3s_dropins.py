"""k3s's own config drop-ins: does one that loads after ours set `default-runtime` back?

k3s reads /etc/rancher/k3s/config.yaml, then every `*.yaml`/`*.yml` file in config.yaml.d in
lexical order (Go's os.ReadDir), each value replacing the one before (pkg/configfilearg
parser.go, `dotDFiles` and `readConfigFile`). A later file that sets `default-runtime` wins
over our 90-gpuconf-nvidia.yaml, and pods would run without the nvidia runtime.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import yaml

from gpuconf.api.runtime_files import K3S_AGENT_CONFIG_DROPIN, RUNTIME_NAME
from gpuconf.node.runtimes.changes import current
from gpuconf.node.runtimes.host import Host, HostPathError

DEFAULT_RUNTIME_KEY = "default-runtime"
_SUFFIXES = (".yaml", ".yml")


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


def _last_values(host_path: str, text: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """The file's top-level keys as k3s reads them: YAML 1.1 into a yaml.v2 MapSlice
    (pkg/configfilearg parser.go readConfigFile), repeated keys kept in order, the last winning;
    an empty or comment-only file has none. Not gpuconf's own loader, which refuses what k3s
    takes."""
    try:
        root = yaml.compose(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError as error:
        raise HostPathError(
            f"{host_path}: not YAML k3s can read ({error}); k3s reads it after "
            f"{K3S_AGENT_CONFIG_DROPIN} and setup cannot tell whether it sets default-runtime"
        ) from None
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise HostPathError(
            f"{host_path}: not a mapping of settings, which k3s refuses too (k3s reads it after "
            f"{K3S_AGENT_CONFIG_DROPIN})"
        )
    return {
        key.value: (key, value) for key, value in root.value if isinstance(key, yaml.ScalarNode)
    }


def refuse_a_later_default_runtime(host: Host) -> None:
    """HostPathError naming the first later drop-in whose `default-runtime` is not nvidia."""
    for host_path in later_dropins(host):
        _, data = current(host, host_path)
        if data is None:
            continue
        found = _last_values(host_path, data.decode("utf-8", "replace"))
        # `key+` appends to the value so far (pkg/configfilearg/parser.go readConfigFile); k3s
        # passes each value as a flag, and the last of a string flag wins.
        for key in (DEFAULT_RUNTIME_KEY, f"{DEFAULT_RUNTIME_KEY}+"):
            if key not in found:
                continue
            at, given = found[key]
            node: yaml.Node | None = given
            if isinstance(given, yaml.SequenceNode):
                node = given.value[-1] if given.value else None
            if not isinstance(node, yaml.ScalarNode) or node.value == RUNTIME_NAME:
                continue
            line, column = at.start_mark.line + 1, at.start_mark.column + 1
            raise HostPathError(
                f"{host_path}:{line}:{column}: {key}: {node.value!r} wins "
                f"over {K3S_AGENT_CONFIG_DROPIN} (k3s reads config.yaml.d in lexical order, the "
                "last value kept), so pods would not run with the nvidia runtime; remove it "
                "there, or rename the file to sort before 90-gpuconf-nvidia.yaml"
            )
