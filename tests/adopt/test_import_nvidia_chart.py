"""`gpuconf import nvidia-chart` writes a cluster file whose rendered NVIDIA configs NVIDIA's own
parser reads as it reads the chart's: the same advertised resources, replicas, sharing and MIG
strategy. NVIDIA's reading comes from nvidia_config_reader/main.go, built against NVIDIA's
published Go module (api/config/v1 at the version in its go.mod), given the plugin's environment
as the chart's daemonset-device-plugin.yml template sets it from the values."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import load_yaml, run_cli

READER = Path(__file__).parent / "nvidia_config_reader"
# templates/daemonset-device-plugin.yml (v0.19.0): which values become which variables.
CHART_ENV = {
    "migStrategy": "MIG_STRATEGY",
    "failOnInitError": "FAIL_ON_INIT_ERROR",
    "compatWithCPUManager": "PASS_DEVICE_SPECS",
    "deviceListStrategy": "DEVICE_LIST_STRATEGY",
    "deviceIDStrategy": "DEVICE_ID_STRATEGY",
}
SHARED = "\n".join


@pytest.fixture(scope="session")
def nvidia_reader() -> Path:
    # The Go the test control plane is built with (a pinned toolchain where the machine has
    # none), so NVIDIA's own parser is the judge wherever `make test` runs, never skipped.
    from control_plane.cluster import ControlPlaneError, go_binary

    try:
        go = go_binary()
    except ControlPlaneError as error:
        pytest.fail(f"NVIDIA's config parser needs Go: {error}", pytrace=False)
    digest = hashlib.sha256(
        b"".join((READER / name).read_bytes() for name in ("main.go", "go.mod", "go.sum"))
    ).hexdigest()[:16]
    out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpuconf-tests"
    binary = out / f"nvidia-config-reader-{digest}"
    if not binary.exists():
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [go, "build", "-o", str(binary), "."], cwd=READER, check=True, capture_output=True
        )
    return binary


def _nvidia_reads(reader: Path, config: Path, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [str(reader), str(config)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def _advertised(reading: dict[str, Any]) -> dict[str, Any]:
    """What the plugin advertises from a reading: resource names with replicas, the sharing
    strategy, the MIG strategy (rm/ in NVIDIA's plugin: a shared resource is renamed
    `<name>.shared` when renameByDefault is set)."""
    sharing = reading.get("sharing") or {}
    resources: dict[str, int] = {}
    strategy = "none"
    for section, name in (("timeSlicing", "time-slicing"), ("mps", "mps")):
        shared = sharing.get(section) or {}
        for resource in shared.get("resources") or []:
            strategy = name
            suffix = ".shared" if shared.get("renameByDefault") else ""
            resources[resource["name"] + suffix] = resource["replicas"]
            if section == "timeSlicing":
                resources["failRequestsGreaterThanOne"] = bool(
                    shared.get("failRequestsGreaterThanOne")
                )
    flags = reading["flags"]
    plugin = flags.get("plugin") or {}
    return {
        "resources": resources or {"nvidia.com/gpu": 1},
        "sharing": strategy,
        "migStrategy": flags["migStrategy"],
        "failOnInitError": flags.get("failOnInitError"),
        # How devices reach containers, which the importer maps too.
        **{
            key: plugin.get(key)
            for key in ("deviceListStrategy", "passDeviceSpecs", "deviceIDStrategy")
        },
    }


def _chart_env(values: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, variable in CHART_ENV.items():
        value = values.get(key)
        if isinstance(value, bool):
            out[variable] = "true" if value else "false"
        elif isinstance(value, str):
            out[variable] = value
    return out


def _rendered_env(daemonset: dict[str, Any]) -> dict[str, str]:
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


CASES = {
    "time-slicing, MPS and whole GPUs in config.map": (
        {
            "config": {
                "map": {
                    "default": "version: v1\nflags:\n  migStrategy: none\n",
                    "t4": SHARED(
                        [
                            "version: v1",
                            "sharing:",
                            "  timeSlicing:",
                            "    failRequestsGreaterThanOne: true",
                            "    resources:",
                            "    - name: nvidia.com/gpu",
                            "      replicas: 4",
                        ]
                    ),
                    "l4": SHARED(
                        [
                            "version: v1",
                            "sharing:",
                            "  mps:",
                            "    resources:",
                            "    - name: nvidia.com/gpu",
                            "      replicas: 2",
                        ]
                    ),
                },
            },
            "migStrategy": "none",
        },
        {},
        ["default=A100-SXM4-80GB:8:2", "t4=Tesla-T4:4:3", "l4=L4:2:4"],
    ),
    "renameByDefault in a ConfigMap made beforehand": (
        {"config": {"name": "plugin-configs", "default": "shared"}},
        {
            "plugin-configs.yaml": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "plugin-configs", "namespace": "nvidia-device-plugin"},
                "data": {
                    "shared": SHARED(
                        [
                            "version: v1",
                            "sharing:",
                            "  timeSlicing:",
                            "    renameByDefault: true",
                            "    resources:",
                            "    - name: nvidia.com/gpu",
                            "      replicas: 8",
                        ]
                    )
                },
            }
        },
        ["shared=L4:2:6"],
    ),
    "one bare config file, no config in the values": (
        {"image": {"tag": "v0.17.2"}, "deviceListStrategy": "cdi-cri", "failOnInitError": True},
        {
            "time-slicing.yaml": {
                "version": "v1",
                "sharing": {
                    "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 3}]}
                },
            }
        },
        ["time-slicing=Tesla-T4:1:5"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_import_renders_to_what_nvidias_parser_reads_from_the_chart(
    case: str, tmp_path: Path, nvidia_reader: Path
) -> None:
    values, files, gpus = CASES[case]
    (tmp_path / "values.yaml").write_text(json.dumps(values))
    for name, content in files.items():
        (tmp_path / name).write_text(json.dumps(content))
    argv = ["import", "nvidia-chart", "values.yaml", *files, "--name", "imported"]
    result = run_cli(*argv, *(a for g in gpus for a in ("--gpus", g)), cwd=tmp_path)
    assert result.code == 0, result.err
    assert run_cli("render", cwd=tmp_path).code == 0

    source_configs = dict(values.get("config", {}).get("map", {}))
    for name, content in files.items():
        if content.get("kind") == "ConfigMap":
            source_configs.update(content["data"])
        else:
            source_configs[Path(name).stem] = json.dumps(content)
    env = _chart_env(values)
    assert sorted(source_configs) == sorted(g.partition("=")[0] for g in gpus)
    for name, text in source_configs.items():
        source = tmp_path / f"source-{name}.yaml"
        source.write_text(text)
        pool = tmp_path / "rendered" / "imported" / "pools" / name
        config_map = load_yaml((pool / "configmap-nvidia-device-plugin.yaml").read_text())
        rendered = tmp_path / f"rendered-{name}.yaml"
        rendered.write_text(config_map["data"]["config.yaml"])
        daemonset = load_yaml((pool / "daemonset-nvidia-device-plugin.yaml").read_text())
        theirs = _advertised(_nvidia_reads(nvidia_reader, source, env))
        ours = _advertised(_nvidia_reads(nvidia_reader, rendered, _rendered_env(daemonset)))
        if "deviceListStrategy" not in json.dumps(values) + text:
            # Unset, NVIDIA's default (envvar) is not imported: gpuconf renders its own.
            del theirs["deviceListStrategy"], ours["deviceListStrategy"]
        assert ours == theirs, name


def test_what_cannot_be_imported_is_listed_where_it_stands(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(
        SHARED(
            [
                "migStrategy: mixed",
                "deviceIDStrategy: index",
                "tolerations: [{key: gpu, operator: Exists}]",
                "config:",
                "  map:",
                "    a100: |",
                "      version: v1",
                "      sharing:",
                "        timeSlicing:",
                "          resources:",
                "          - {name: nvidia.com/mig-1g.10gb, replicas: 2}",
                "          - {name: nvidia.com/gpu, replicas: 2, rename: shared-a100}",
                "",
            ]
        )
    )
    result = run_cli(
        "import", "nvidia-chart", "values.yaml", "--name", "a", "--gpus", "a100=A100-SXM4-80GB:8:2",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if ": warning: " in line]
    assert warnings == [
        "values.yaml:1:1: (document): warning: the chart's files do not say which container runtime the nodes run: containerd assumed (hint: set each pool's runtime.engine (docker, containerd, k3s) before rendering)",
        "values.yaml:1:1: migStrategy: warning: flags.migStrategy: 'mixed' needs the pools' MIG layouts, which the chart's files do not hold (hint: declare the pool's sharing: [{strategy: mig, layout: …}]; gpuconf then picks the strategy)",
        "values.yaml:2:1: deviceIDStrategy: warning: flags.plugin.deviceIDStrategy: 'index' is not what gpuconf renders ('uuid')",
        "values.yaml:3:1: tolerations: warning: not imported; gpuconf renders its own",
        "values.yaml:6:5: config.map.a100: warning: config 'a100': 'nvidia.com/mig-1g.10gb': gpuconf shares MIG devices only in a pool whose MIG layout it knows (hint: declare the layout, then a class per profile)",
        "values.yaml:6:5: config.map.a100: warning: config 'a100': rename: NVIDIA's plugin ignores it at run time (api/config/v1 DisableResourceNamingInConfig)",
    ]
    written = (tmp_path / "clusters" / "a.yaml").read_text()
    assert (
        "#   - values.yaml:6:5: config.map.a100: config 'a100': rename: NVIDIA's plugin ignores it"
        in written
    )


CHART_VALUES = "config:\n  name: time-slicing-config\n  default: any\n"  # POLICY_CONFIGS


@pytest.mark.parametrize(
    ("source", "first"), [("nvidia-chart", "values.yaml"), ("gpu-operator", "policy.yaml")]
)
@pytest.mark.parametrize("piped", ["first", "configmap"])
def test_the_first_file_or_a_configmap_may_be_piped_on_stdin(
    tmp_path: Path, source: str, first: str, piped: str
) -> None:
    """`helm get values … | gpuconf import nvidia-chart - …`, `kubectl get clusterpolicy … -o
    yaml | gpuconf import gpu-operator - …`: the same cluster as from the files."""
    texts = {
        first: json.dumps(POLICY) if source == "gpu-operator" else CHART_VALUES,
        "configs.yaml": json.dumps(POLICY_CONFIGS),
    }
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    options = ["--gpus", "any=L4:2:3", "--gpus", "mps=L4:2:1", "--name", "x"]
    from_files = run_cli("import", source, first, "configs.yaml", *options, cwd=tmp_path)
    written = (tmp_path / "clusters" / "x.yaml").read_text()
    stdin_name = first if piped == "first" else "configs.yaml"
    argv = ["-" if name == stdin_name else name for name in (first, "configs.yaml")]
    from_stdin = run_cli(
        "import", source, *argv, *options, "--force", cwd=tmp_path, stdin=texts[stdin_name]
    )
    assert from_files.code == from_stdin.code == 0, from_stdin.err
    assert from_stdin.err == from_files.err.replace(f"{stdin_name}:", "<stdin>:")
    piped_in = (tmp_path / "clusters" / "x.yaml").read_text()
    assert load_yaml(piped_in)["spec"] == load_yaml(written)["spec"]


def test_a_config_file_piped_on_stdin_has_no_name_and_is_refused(tmp_path: Path) -> None:
    """A config file is named by its file name; a ConfigMap names its configs itself."""
    (tmp_path / "values.yaml").write_text("config:\n  default: a\n")
    result = run_cli(
        "import", "nvidia-chart", "values.yaml", "-", "--name", "x", "--gpus", "a=L4:1:1",
        cwd=tmp_path, stdin="version: v1\n",
    )  # fmt: skip
    assert result.code == 1
    assert result.err.startswith(
        "<stdin>:1:1: (document): a config file on standard input has no file name"
    ), result.err
    assert not (tmp_path / "clusters").exists()


def test_import_needs_the_gpus_of_every_config_and_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(
        "config:\n  map:\n    a: 'version: v1'\n    b: 'version: v1'\n"
    )
    result = run_cli(
        "import", "nvidia-chart", "values.yaml", "--name", "x", "--gpus", "a=L4:1:1", cwd=tmp_path
    )
    assert result.code == 2
    assert "give --gpus b=MODEL:COUNT:NODES" in result.err
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "x.yaml").write_text("mine\n")
    argv = [
        "import",
        "nvidia-chart",
        "values.yaml",
        "--name",
        "x",
        "--gpus",
        "a=L4:1:1",
        "--gpus",
        "b=L4:1:1",
    ]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.code == 2
    assert "clusters/x.yaml exists" in result.err
    assert (tmp_path / "clusters" / "x.yaml").read_text() == "mine\n"


def test_gpus_for_a_config_the_chart_does_not_have_are_refused_not_dropped(
    tmp_path: Path,
) -> None:
    """A mistyped config name declared nodes nowhere, and the import went on without a word."""
    (tmp_path / "values.yaml").write_text(
        "config:\n  map:\n    t4-shared: 'version: v1'\n    a100: 'version: v1'\n"
    )
    argv = [
        "import",
        "nvidia-chart",
        "values.yaml",
        "--name",
        "x",
        "--gpus",
        "a100=A100-SXM4-80GB:8:2",
    ]
    result = run_cli(
        *argv, "--gpus", "t4-shared=Tesla-T4:4:6", "--gpus", "t4shared=Tesla-T4:4:2", cwd=tmp_path
    )
    assert result.code == 2
    assert result.err == (
        "gpuconf: --gpus t4shared=Tesla-T4:4:2: the chart's files have no config 't4shared' "
        "(their configs: a100, t4-shared)\n"
    )
    assert not (tmp_path / "clusters").exists()


def test_a_chart_value_every_config_runs_with_is_listed_once(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text(
        "migStrategy: mixed\nconfig:\n  map:\n    a: 'version: v1'\n    b: 'version: v1'\n"
    )
    argv = ["--gpus", "a=A100-SXM4-80GB:8:1", "--gpus", "b=A100-SXM4-80GB:8:1"]
    result = run_cli("import", "nvidia-chart", "values.yaml", "--name", "x", *argv, cwd=tmp_path)
    assert result.code == 0, result.err
    said = [line for line in result.err.splitlines() if "migStrategy: 'mixed'" in line]
    assert said == [
        "values.yaml:1:1: migStrategy: warning: flags.migStrategy: 'mixed' needs the pools' MIG "
        "layouts, which the chart's files do not hold (hint: declare the pool's sharing: "
        "[{strategy: mig, layout: …}]; gpuconf then picks the strategy)"
    ]
    header = (tmp_path / "clusters" / "x.yaml").read_text()
    assert header.count("migStrategy: 'mixed'") == 1


POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {
        "operator": {"defaultRuntime": "docker"},
        "driver": {"enabled": True, "version": "550.90.07"},
        "dcgmExporter": {"enabled": False},
        "mig": {"strategy": "none"},
        "devicePlugin": {
            "version": "v0.17.2",
            "config": {"name": "time-slicing-config", "default": "any"},
            # NVIDIA reads booleans with Go's strconv.ParseBool: "1" is true.
            "env": [
                {"name": "FAIL_ON_INIT_ERROR", "value": "true"},
                {"name": "PASS_DEVICE_SPECS", "value": "1"},
            ],
        },
    },
}
POLICY_CONFIGS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
    "data": {
        "any": SHARED(
            [
                "version: v1",
                "sharing:",
                "  timeSlicing:",
                "    resources:",
                "    - name: nvidia.com/gpu",
                "      replicas: 4",
            ]
        ),
        "mps": SHARED(
            [
                "version: v1",
                "sharing:",
                "  mps:",
                "    resources:",
                "    - name: nvidia.com/gpu",
                "      replicas: 3",
            ]
        ),
    },
}


def test_the_gpu_operator_import_renders_to_what_nvidias_parser_reads_from_the_policy(
    tmp_path: Path, nvidia_reader: Path
) -> None:
    (tmp_path / "policy.yaml").write_text(json.dumps(POLICY))
    (tmp_path / "configs.yaml").write_text(json.dumps(POLICY_CONFIGS))
    argv = ["import", "gpu-operator", "policy.yaml", "configs.yaml", "--name", "op"]
    result = run_cli(*argv, "--gpus", "any=L4:2:3", "--gpus", "mps=L4:2:1", cwd=tmp_path)
    assert result.code == 0, result.err
    assert ": spec.driver: warning: left to the GPU Operator" in result.err
    assert "spec.dcgmExporter" not in result.err  # disabled: nothing to leave out
    # PASS_DEVICE_SPECS "1" is true to NVIDIA, and not what gpuconf renders: listed, not dropped.
    assert "flags.plugin.passDeviceSpecs: True is not what gpuconf renders (False)" in result.err
    assert run_cli("render", cwd=tmp_path).code == 0
    # controllers/object_controls.go: MIG_STRATEGY from spec.mig.strategy, then devicePlugin.env.
    env = {"MIG_STRATEGY": "none", "FAIL_ON_INIT_ERROR": "true", "PASS_DEVICE_SPECS": "1"}
    for name, text in POLICY_CONFIGS["data"].items():
        (tmp_path / f"source-{name}.yaml").write_text(text)
        pool = tmp_path / "rendered" / "op" / "pools" / name
        config_map = load_yaml((pool / "configmap-nvidia-device-plugin.yaml").read_text())
        (tmp_path / f"rendered-{name}.yaml").write_text(config_map["data"]["config.yaml"])
        daemonset = load_yaml((pool / "daemonset-nvidia-device-plugin.yaml").read_text())
        theirs = _advertised(_nvidia_reads(nvidia_reader, tmp_path / f"source-{name}.yaml", env))
        ours = _advertised(
            _nvidia_reads(
                nvidia_reader, tmp_path / f"rendered-{name}.yaml", _rendered_env(daemonset)
            )
        )
        # Unset, NVIDIA's default (envvar) is not imported: gpuconf renders its own; and
        # passDeviceSpecs is listed above as not imported.
        for listed in ("deviceListStrategy", "passDeviceSpecs"):
            del theirs[listed], ours[listed]
        assert ours == theirs, name
    written = load_yaml((tmp_path / "clusters" / "op.yaml").read_text())
    assert {p["runtime"]["engine"] for p in written["spec"]["nodePools"]} == {"docker"}


@pytest.mark.parametrize(
    ("spec", "diagnostic"),
    [
        ("spec: 5", "policy.yaml:4:1: spec: should be a mapping, not 5"),
        ("spec: {devicePlugin: [a]}", 'policy.yaml:4:8: spec.devicePlugin: should be a mapping, not ["a"]'),
        ("spec: {mig: none}", "policy.yaml:4:8: spec.mig: should be a mapping, not 'none'"),
        ("spec: {devicePlugin: {config: 5}}", "policy.yaml:4:23: spec.devicePlugin.config: should be a mapping, not 5"),
        ("spec: {devicePlugin: {env: {a: b}}}", 'policy.yaml:4:23: spec.devicePlugin.env: should be a list, not {"a": "b"}'),
        ("spec: {operator: true}", "policy.yaml:4:8: spec.operator: should be a mapping, not true"),
    ],
    ids=["spec", "devicePlugin", "mig", "config", "env", "operator"],
)  # fmt: skip
def test_a_cluster_policy_of_the_wrong_shape_is_refused_where_it_is_wrong(
    spec: str, diagnostic: str, tmp_path: Path
) -> None:
    policy = "apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata: {name: p}\n"
    (tmp_path / "policy.yaml").write_text(policy + spec + "\n")
    argv = ["import", "gpu-operator", "policy.yaml", "--name", "op", "--gpus", "default=L4:1:1"]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.code == 1, result.err
    assert result.err.startswith(diagnostic + "\n"), result.err
    assert not (tmp_path / "clusters").exists()


@pytest.mark.parametrize(
    ("config", "warning", "pool"),
    [
        (
            "sharing: {timeSlicing: {resources: 5}}",
            "config 'a_B': resources: not a list",
            {"name": "a-b", "select": {"pools": ["a-b"]}},
        ),
        (
            "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}}",
            "config 'a_B': replicas 1: NVIDIA's parser refuses fewer than 2",
            {"name": "a-b", "select": {"pools": ["a-b"]}},
        ),
    ],
    ids=["resources-not-a-list", "one-replica"],
)
def test_configs_nvidia_would_refuse_import_as_whole_gpus_with_a_warning(
    config: str, warning: str, pool: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "values.yaml").write_text(json.dumps({"config": {"map": {"a_B": config}}}))
    argv = ["import", "nvidia-chart", "values.yaml", "--name", "x", "--gpus", "a_B=L4:1:1"]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.code == 0, result.err
    assert warning in result.err
    spec = load_yaml((tmp_path / "clusters" / "x.yaml").read_text())["spec"]
    assert spec["resourceClasses"] == [pool]
    # The pool's name is a DNS label; its nodes keep the config's own name in their label.
    assert spec["nodePools"][0]["nodeSelector"] == {"nvidia.com/device-plugin.config": "a_B"}


def test_cdi_annotations_are_listed_not_turned_into_gpuconfs_cdi(tmp_path: Path) -> None:
    # gpuconf's cdi renders NVIDIA's cdi-cri (plan/nvidia_plugin.py); cdi-annotations hands the
    # devices over another way, which gpuconf does not render.
    (tmp_path / "values.yaml").write_text(json.dumps({"deviceListStrategy": "cdi-annotations"}))
    argv = ["import", "nvidia-chart", "values.yaml", "--name", "x", "--gpus", "default=L4:1:1"]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.code == 0, result.err
    assert "'cdi-annotations' has no single gpuconf equivalent" in result.err
    spec = load_yaml((tmp_path / "clusters" / "x.yaml").read_text())["spec"]
    assert "deviceListStrategy" not in (spec.get("node") or {})


def test_a_config_name_longer_than_a_pool_name_makes_a_pool_name_validate_takes(
    tmp_path: Path,
) -> None:
    # gpuconf-<pool> is the nodes' nvidia.com/mig.config label value: a pool name is at most 55.
    # The config's name is a label value itself (the nodes' device-plugin.config), at most 63.
    config = "Big-Config_" + "x" * 52
    assert len(config) == 63
    sharing = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}"
    (tmp_path / "values.yaml").write_text(json.dumps({"config": {"map": {config: sharing}}}))
    argv = ["import", "nvidia-chart", "values.yaml", "--name", "x", "--gpus", f"{config}=L4:1:1"]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.code == 0, result.err
    [pool] = load_yaml((tmp_path / "clusters" / "x.yaml").read_text())["spec"]["nodePools"]
    assert len(pool["name"]) == 55
    assert pool["nodeSelector"] == {"nvidia.com/device-plugin.config": config}
    validated = run_cli("validate", "clusters/x.yaml", cwd=tmp_path)
    assert validated.code == 0, validated.err


def test_a_cluster_file_that_cannot_be_written_is_a_user_error_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "values.yaml").write_text("config: {}\n")
    (tmp_path / "clusters").write_text("a file where the clusters folder would be\n")
    result = run_cli(
        "import", "nvidia-chart", "values.yaml", "--name", "a", "--gpus", "default=L4:1:1",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 1, result.err
    assert "gpuconf: cannot write clusters/a.yaml: " in result.err
    assert result.err.endswith("(hint: a file stands where a folder must go)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clusters", "values.yaml"]


@pytest.mark.parametrize(
    ("shape", "why"),
    [
        ("L4:0:1", "a node has 1 to 64 GPUs"),
        ("L4:99999999999999999999:1", "a node has 1 to 64 GPUs"),
        ("L4:1:0", "a pool has 1 to 100000 nodes"),
        ("L4:1:99999999999999999", "a pool has 1 to 100000 nodes"),
    ],
)
def test_a_gpu_shape_no_cluster_file_can_hold_is_refused_on_the_command_line(
    tmp_path: Path, shape: str, why: str
) -> None:
    """Not at a line of a cluster file that was never written."""
    (tmp_path / "values.yaml").write_text("config: {}\n")
    result = run_cli(
        "import", "nvidia-chart", "values.yaml", "--name", "a", "--gpus", f"default={shape}",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 2, result.err
    assert result.err == f"gpuconf: --gpus default={shape}: {why}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["values.yaml"]
