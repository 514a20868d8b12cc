"""k3s templates setup writes render after k3s's base (Go text/template, as k3s runs it) and load
in containerd with nothing declared twice.

The base here is a stand-in with the tables k3s's base declares (pkg/agent/templates in k3s:
the opt plugin, the CRI table with its containerd and cni tables, runc with
`SystemdCgroup = {{ .SystemdCgroup }}`, one table per runtime k3s detects on its PATH); it needs
Go to build the renderer and containerd to load the result, and skips without them (and
outside `make test-runtimes`, to keep the whole suite quick)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from builders import HostTree, setup_config

pytestmark = pytest.mark.runtimes

RENDERER = Path(__file__).parent / "k3s_render" / "main.go"
TEMPLATES = "/var/lib/rancher/k3s/agent/etc/containerd"
CUSTOM = "/opt/nvidia/bin/nvidia-container-runtime"
BASES = {
    2: """version = 2
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/rancher/k3s/agent/containerd"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "10010"
  sandbox_image = "rancher/mirrored-pause:3.6"
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/var/lib/rancher/k3s/data/cni"
  conf_dir = "/var/lib/rancher/k3s/agent/etc/cni/net.d"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = {{ .SystemdCgroup }}
{{ range $name, $runtime := .ExtraRuntimes }}
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{ $name }}"]
  runtime_type = "{{ $runtime.RuntimeType }}"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."{{ $name }}".options]
  BinaryName = "{{ $runtime.BinaryName }}"
{{ end }}""",
    3: """version = 3
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "rancher/mirrored-pause:3.6"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = {{ .SystemdCgroup }}
{{ range $name, $runtime := .ExtraRuntimes }}
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{{ $name }}']
  runtime_type = "{{ $runtime.RuntimeType }}"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'{{ $name }}'.options]
  BinaryName = "{{ $runtime.BinaryName }}"
{{ end }}""",
}
RUNSC = {
    2: '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes."runsc"]\n  runtime_type = "io.containerd.runsc.v1"\n',
    3: "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'runsc']\n  runtime_type = \"io.containerd.runsc.v1\"\n",
}


def _go() -> str | None:
    return shutil.which("go") or next(iter(sorted(glob.glob("/usr/lib/go-*/bin/go"))[-1:]), None)


def _containerd(generation: int) -> str | None:
    candidates = [shutil.which("containerd") or ""]
    candidates += os.environ.get("GPUCONF_TEST_CONTAINERD", "").split(":")
    for path in filter(None, candidates):
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, check=False
        ).stdout
        is_2x = " v2." in out or " 2." in out
        if (generation == 3) == is_2x:
            return path
    return None


@pytest.fixture(scope="module")
def renderer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if "runtimes" not in (request.config.option.markexpr or ""):
        pytest.skip("builds a Go program (~30 s): runs with -m runtimes (make test-runtimes)")
    go = _go()
    if go is None:
        pytest.skip("Go is not installed (it builds the template renderer)")
    out = tmp_path_factory.mktemp("renderer") / "render"
    env = {**os.environ, "GOCACHE": str(out.parent / "cache"), "GOFLAGS": "-mod=mod"}
    subprocess.run(
        [go, "build", "-o", str(out), str(RENDERER)], check=True, env=env, cwd=out.parent
    )
    return out


def _render(renderer: Path, user: Path, generation: int, tmp: Path, extra: dict[str, Any]) -> str:
    base = tmp / f"base-v{generation}.tmpl"
    base.write_text(BASES[generation])
    data = json.dumps({"SystemdCgroup": True, "ExtraRuntimes": extra})
    result = subprocess.run(
        [str(renderer), str(user), str(base), data], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("generation", [2, 3])
@pytest.mark.parametrize(
    "existing", [False, True], ids=["new template", "custom template with runsc"]
)
def test_setup_s_template_renders_after_the_base_and_containerd_loads_it(
    tmp_path: Path, renderer: Path, generation: int, existing: bool
) -> None:
    binary = _containerd(generation)
    if binary is None:
        pytest.skip(f"no containerd that reads config version {generation}")
    host = HostTree(tmp_path)
    host.write(CUSTOM, "#!/bin/sh\n")
    host.at("/usr/bin/nvidia-container-runtime").unlink()
    name = "config-v3.toml.tmpl" if generation == 3 else "config.toml.tmpl"
    if existing:
        host.write(f"{TEMPLATES}/{name}", '{{ template "base" . }}\n\n' + RUNSC[generation])
    else:
        host.program(
            "k3s", f"echo 'k3s version {'v1.32.2+k3s1' if generation == 3 else 'v1.30.4+k3s1'} (x)'"
        )
    assert host.setup(setup_config("k3s", binaryPath=CUSTOM)).code == 0
    # k3s's own detected runtimes (crun here) come from the base; nvidia only from setup.
    extra = {"crun": {"RuntimeType": "io.containerd.runc.v2", "BinaryName": "/usr/bin/crun"}}
    config = tmp_path / "config.toml"
    config.write_text(
        _render(renderer, host.at(f"{TEMPLATES}/{name}"), generation, tmp_path, extra)
    )
    dump = subprocess.run(
        [binary, "--config", str(config), "config", "dump"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert dump.returncode == 0, dump.stderr
    plugins = tomllib.loads(dump.stdout)["plugins"]
    cri = plugins[
        "io.containerd.cri.v1.runtime" if generation == 3 else "io.containerd.grpc.v1.cri"
    ]
    runtimes = cri["containerd"]["runtimes"]
    assert runtimes["nvidia"]["options"]["BinaryName"] == CUSTOM
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is True
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    assert "crun" in runtimes
    assert ("runsc" in runtimes) is existing
