"""The operations and templates pages stay true: the fake NVML file is one the runtime reads, the
`node check` sample is what the command prints, the metrics table is every metric, and a whole
site template's refusal is what `gpuconf render` prints."""

from __future__ import annotations

import re
from pathlib import Path

from builders import RENDERED, REPO, load_yaml, read_tree, run_cli

from gpuconf.node.metrics import Metrics
from gpuconf.node.nvml.fake import read_inventory

OPERATIONS = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")


def _fake_nvml_sample() -> str:
    section = OPERATIONS[OPERATIONS.index("### The fake NVML file") :]
    return re.findall(r"^```yaml\n(.*?)^```$", section, flags=re.M | re.S)[0]


def _write_node_check_inputs(folder: Path) -> None:
    """What the sample's command line names: the fake file and lab's node config for pool t4."""
    (folder / "fake-nvml.yaml").write_text(_fake_nvml_sample())
    (folder / "xid-events.jsonl").write_text("")
    configmap = load_yaml(read_tree(RENDERED / "lab")["pools/t4/configmap-node-config.yaml"])
    (folder / "node-config.yaml").write_text(configmap["data"]["node-config.yaml"])


def test_the_documented_fake_nvml_file_is_one_the_runtime_reads(tmp_path: Path) -> None:
    _write_node_check_inputs(tmp_path)
    inventory = read_inventory(tmp_path / "fake-nvml.yaml")
    assert [gpu.index for gpu in inventory.gpus] == [0, 1]
    assert inventory.events_path == tmp_path / "xid-events.jsonl"


def test_the_node_check_sample_is_what_the_command_prints(tmp_path: Path) -> None:
    _write_node_check_inputs(tmp_path)
    sample = re.search(r"```console\n\$ gpuconf (node check .*?)\n(.*?)```", OPERATIONS, re.S)
    assert sample
    argv = [
        a.replace("fake-nvml.yaml", str(tmp_path / "fake-nvml.yaml")) for a in sample[1].split()
    ]
    argv = [
        a.replace("node-config.yaml", str(tmp_path / "node-config.yaml"))
        if a == "node-config.yaml"
        else a
        for a in argv
    ]
    result = run_cli(*argv)
    assert result.code == 1
    # Away from a node no runtime answers on the metrics port; only that line may differ.
    *report, pending = result.out.splitlines()
    *shown, shown_pending = sample[2].splitlines()
    assert report == shown
    assert pending.split(" (")[0] == shown_pending.split(" (")[0] == "pending GPU changes: unknown"


def test_the_node_labels_sample_is_what_the_command_prints(tmp_path: Path) -> None:
    _write_node_check_inputs(tmp_path)
    sample = re.search(r"```console\n\$ gpuconf (node labels .*?)\n(.*?)```", OPERATIONS, re.S)
    assert sample
    argv = [
        str(tmp_path / a) if a in ("node-config.yaml", "fake:fake-nvml.yaml") else a
        for a in sample[1].split()
    ]
    argv = [a.replace(f"{tmp_path}/fake:", "fake:" + str(tmp_path) + "/") for a in argv]
    result = run_cli(*argv, "--machine-type-file", str(tmp_path / "no-such-file"))
    assert result.code == 0, result.err
    assert result.out == sample[2]


def test_the_metrics_table_lists_every_metric_the_runtime_exports() -> None:
    metrics = Metrics()
    exposition = metrics.registry.exposition().decode()
    exported = {
        name
        for name in re.findall(r"^# TYPE (\S+) ", exposition, flags=re.M)
        if not name.endswith("_created")
    }
    documented = set(re.findall(r"^\| `(gpuconf_node_\w+)` \|", OPERATIONS, flags=re.M))
    assert documented == exported


def test_the_readme_links_only_to_pages_that_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links
    assert [link for link in links if not (REPO / link).is_file()] == []


TEMPLATES_PAGE = (REPO / "docs" / "templates.md").read_text(encoding="utf-8")


def test_the_whole_site_template_sample_is_refused_as_the_templates_page_shows(
    tmp_path: Path,
) -> None:
    section = TEMPLATES_PAGE[TEMPLATES_PAGE.index("A `site/namespace.yaml.j2` of its own") :]
    template = re.findall(r"^```jinja\n(.*?)^```$", section, flags=re.M | re.S)[0]
    command, shown = re.findall(r"^```console\n\$ gpuconf (.*?)\n(.*?)^```$", section, re.M | re.S)[
        0
    ]
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "namespace.yaml.j2").write_text(template)
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "lab.yaml").write_bytes((REPO / "clusters" / "lab.yaml").read_bytes())
    result = run_cli(*command.split(), cwd=tmp_path)
    assert result.code == 1
    assert result.err.splitlines()[0] == shown.strip()
