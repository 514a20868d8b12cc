"""k3s: its embedded containerd's template, merged rather than replaced, and the default runtime.

k3s renders containerd's config at every start from the first template that exists,
config-v3.toml.tmpl before config.toml.tmpl (releases with containerd 2 only read the v3 name);
its base template already declares the `nvidia` runtime when it finds nvidia-container-runtime
on its PATH, and declaring a table twice stops containerd ("table nvidia already exists").
The default runtime goes through k3s's own `default-runtime` setting, never the template.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from gpuconf.api.node_config import RuntimeSettings
from gpuconf.api.runtime_files import (
    K3S_AGENT_CONFIG_DROPIN,
    K3S_TEMPLATE_V2,
    K3S_TEMPLATE_V3,
    RUNTIME_NAME,
)
from gpuconf.formats.toml_writer import toml_value
from gpuconf.node.runtimes.changes import FileChange, current
from gpuconf.node.runtimes.host import Host, HostPathError
from gpuconf.node.runtimes.k3s_dropins import refuse_a_later_default_runtime
from gpuconf.node.runtimes.versions import Version, engine_version

BASE_TEMPLATE_LINE = '{{ template "base" . }}'
DETECTED_BINARY_NAME = "nvidia-container-runtime"
# Where k3s finds nvidia-container-runtime by itself (and then declares `nvidia` in its base
# template), by release. Before the October 2024 releases it looked only in the GPU Operator's
# folder and /usr/bin (pkg/agent/containerd/nvidia.go, later runtimes.go
# findNvidiaContainerRuntimes, `locationsToCheck`); from them it calls exec.LookPath with
# /usr/local/nvidia/toolkit:/opt/kwasm/bin put before the service's PATH (runtimes.go
# searchForRuntimes; config_linux.go `runtimesPath`; k3s issue 10761, PR 10953 and its
# backports 11002-11005). systemd gives the k3s unit no PATH of its own: its default is below.
K3S_FIXED_DIRS = frozenset({"/usr/local/nvidia/toolkit", "/usr/bin"})
K3S_PATH_DIRS = frozenset(
    {"/usr/local/nvidia/toolkit", "/opt/kwasm/bin"}
    | {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
)
PATH_SEARCH_SINCE: dict[int, int] = {28: 15, 29: 10, 30: 6, 31: 2}
"""Per 1.x release line, the first patch release that searches PATH (every 1.32 does)."""
_CRI_PLUGIN = {2: '"io.containerd.grpc.v1.cri"', 3: "'io.containerd.cri.v1.runtime'"}


def searches_path(k3s: Version) -> bool:
    minor, patch = k3s[1], k3s[2]
    return k3s[0] > 1 or minor >= 32 or patch >= PATH_SEARCH_SINCE.get(minor, 1 << 30)


def searched_dirs(k3s: Version | None) -> frozenset[str]:
    """The folders this k3s release finds nvidia-container-runtime in; for an unknown release,
    the folders every release searches."""
    if k3s is None:
        return K3S_FIXED_DIRS & K3S_PATH_DIRS
    return K3S_PATH_DIRS if searches_path(k3s) else K3S_FIXED_DIRS


def detected_by_k3s(binary_path: str, k3s: Version | None) -> bool:
    """Whether this k3s release declares `nvidia` itself for ``binary_path``; HostPathError when
    the release is unknown and only some releases would."""
    path = PurePosixPath(binary_path)
    if path.name != DETECTED_BINARY_NAME:
        return False
    folder = str(path.parent)
    if k3s is None and folder in K3S_FIXED_DIRS ^ K3S_PATH_DIRS:
        raise HostPathError(
            f"cannot tell whether k3s finds {binary_path} itself: `k3s --version` gave no "
            f"release, and k3s searches {folder} only from v1.28.15, v1.29.10, v1.30.6, "
            f"v1.31.2 and v1.32 on; install nvidia-container-runtime in /usr/bin (found by "
            "every release), or make `k3s --version` work on the host"
        )
    return folder in searched_dirs(k3s)


def ships_containerd_2(k3s: Version) -> bool:
    """containerd 2 (and the v3 template) came with v1.31.6+k3s1 and v1.32.2+k3s1."""
    minor, patch = k3s[1], k3s[2]
    return minor >= 33 or (minor == 32 and patch >= 2) or (minor == 31 and patch >= 6)


def plan(settings: RuntimeSettings, host: Host) -> list[FileChange]:
    k3s = engine_version(host, "k3s")
    if settings.enable_cdi:
        _check_cdi(k3s)
    changes = []
    if not detected_by_k3s(settings.binary_path, k3s):
        _refuse_a_second_nvidia(settings, host, k3s)
        changes.append(_template_change(settings, host, k3s))
    if settings.set_as_default:
        refuse_a_later_default_runtime(host)
        path, old = current(host, K3S_AGENT_CONFIG_DROPIN)
        changes.append(FileChange(K3S_AGENT_CONFIG_DROPIN, path, old, default_runtime_dropin()))
    return changes


def _refuse_a_second_nvidia(settings: RuntimeSettings, host: Host, k3s: Version | None) -> None:
    """k3s declares `nvidia` for a binary it finds itself; ours would be a second table."""
    maybe_searched = K3S_FIXED_DIRS | K3S_PATH_DIRS if k3s is None else searched_dirs(k3s)
    for folder in sorted(maybe_searched):
        found = f"{folder}/{DETECTED_BINARY_NAME}"
        if host.path(found).exists():
            raise HostPathError(
                f"k3s declares the nvidia runtime itself for {found}; declaring it again for "
                f"{settings.binary_path} would stop containerd (table nvidia already exists): "
                f"set the pool's runtime.binaryPath to {found}, or remove it from the host"
            )


def _check_cdi(k3s: Version | None) -> None:
    """CDI lives in the CRI table k3s's base template owns: setup cannot add it without
    declaring that table twice. containerd 2 has it on; with an older containerd the plugin's
    CDI names would be ignored and pods would start without their GPUs, so setup refuses."""
    if k3s is not None and ships_containerd_2(k3s):
        return
    found = "an unknown k3s release" if k3s is None else "k3s " + ".".join(map(str, k3s))
    raise HostPathError(
        f"{found} may run containerd without CDI (k3s turns it on only with containerd 2: "
        "v1.31.6+, v1.32.2+): pods would get no GPU; set spec.node.deviceListStrategy to "
        "volume-mounts, or upgrade k3s"
    )


def default_runtime_dropin() -> bytes:
    return f"default-runtime: {RUNTIME_NAME}\n".encode()


def _template_change(settings: RuntimeSettings, host: Host, k3s: Version | None) -> FileChange:
    for host_path, generation in ((K3S_TEMPLATE_V3, 3), (K3S_TEMPLATE_V2, 2)):
        path, old = current(host, host_path)
        if old is not None:
            return FileChange(host_path, path, old, merged_template(old, generation, settings))
    # Unknown release: the v2 name, which every k3s reads (newer ones as legacy config).
    generation = 3 if k3s is not None and ships_containerd_2(k3s) else 2
    host_path = K3S_TEMPLATE_V3 if generation == 3 else K3S_TEMPLATE_V2
    path, old = current(host, host_path)
    text = BASE_TEMPLATE_LINE + "\n\n" + runtime_tables(generation, settings.binary_path)
    return FileChange(host_path, path, old, text.encode())


def merged_template(old: bytes, generation: int, settings: RuntimeSettings) -> bytes:
    """The host's template with the nvidia runtime appended, unless it declares one already."""
    try:
        text = old.decode()
    except UnicodeDecodeError:
        raise HostPathError(f"{_name(generation)}: not UTF-8 text; left untouched") from None
    if declares_runtime(text, RUNTIME_NAME):
        return old
    separator = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    return (text + separator + runtime_tables(generation, settings.binary_path)).encode()


def declares_runtime(template: str, name: str) -> bool:
    """Whether a table header in the template names runtime ``name`` (quoted or bare)."""
    for line in template.splitlines():
        header = line.strip()
        if not header.startswith("["):
            continue
        for spelling in (name, f'"{name}"', f"'{name}'"):
            if f"runtimes.{spelling}]" in header or f"runtimes.{spelling}." in header:
                return True
    return False


def runtime_tables(generation: int, binary_path: str) -> str:
    """The runtime as template text; SystemdCgroup follows k3s's own choice for runc."""
    if "{{" in binary_path or "}}" in binary_path:
        raise HostPathError(f"binary path {binary_path!r} would be read as template code")
    table = f"plugins.{_CRI_PLUGIN[generation]}.containerd.runtimes.{toml_value(RUNTIME_NAME)}"
    return (
        f"[{table}]\n"
        f'  runtime_type = "io.containerd.runc.v2"\n'
        f"\n[{table}.options]\n"
        f"  BinaryName = {toml_value(binary_path)}\n"
        "  SystemdCgroup = {{ .SystemdCgroup }}\n"
    )


def _name(generation: int) -> str:
    return K3S_TEMPLATE_V3 if generation == 3 else K3S_TEMPLATE_V2
