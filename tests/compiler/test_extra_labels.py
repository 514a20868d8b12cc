"""monitoring.extraLabels add labels to the PodMonitors, the PrometheusRule and the dashboard, and
never change one gpuconf writes there: validate refuses that at the extraLabels key, naming what
selects on the label, and only warns where the value is gpuconf's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import check, cluster_file, errors, load_yaml, rendered, run_cli

from gpuconf.diagnostics import Severity, format_path
from gpuconf.formats.yaml_writer import dump

MONITORING_OBJECTS = ("PodMonitor", "PrometheusRule", "ConfigMap")


def _labelled(extra: dict[str, str], **monitoring: Any) -> dict[str, Any]:
    document = cluster_file("lab")
    document["spec"]["node"] = {"monitoring": {"extraLabels": extra, **monitoring}}
    return document


def _monitoring_objects(tree: dict[str, bytes]) -> list[dict[str, Any]]:
    objects = [load_yaml(data) for path, data in tree.items() if path.startswith("monitoring/")]
    return [o for o in objects if o["kind"] in MONITORING_OBJECTS]


# docs/templates.md (extra_labels): the labels marking an object as gpuconf's, which a re-render
# finds its Namespaces by; the value each has on cluster lab, and a piece of the refusal's hint.
OWNER_LABELS = {
    "app.kubernetes.io/managed-by": ("gpuconf", "a re-render keeps the Namespaces it created"),
    "gpuconf.dev/cluster": ("lab", "a re-render finds the Namespaces it created"),
}


def test_gpuconf_writes_its_owner_labels_on_every_object_extra_labels_labels() -> None:
    objects = _monitoring_objects(rendered(cluster_file("lab")))
    assert sorted(o["kind"] for o in objects) == [
        "ConfigMap",
        "PodMonitor",
        "PodMonitor",
        "PrometheusRule",
    ]
    for obj in objects:
        labels = obj["metadata"]["labels"]
        assert {key: labels.get(key) for key in OWNER_LABELS} == {
            key: value for key, (value, _) in OWNER_LABELS.items()
        }


@pytest.mark.parametrize("key", sorted(OWNER_LABELS))
def test_an_extra_label_changing_one_gpuconf_writes_is_refused_at_its_key_naming_its_readers(
    key: str,
) -> None:
    value, reader = OWNER_LABELS[key]
    (refused,) = errors(_labelled({"release": "kube-prometheus-stack", key: "mine"}))
    assert format_path(refused.path) == f"spec.node.monitoring.extraLabels.{key}"
    # The wording every refusal of a guarded label shares (resolve/metadata_guard.py).
    assert (
        refused.message == f"the entry changes the label {key}: {value!r} gpuconf writes to 'mine'"
    )
    assert refused.hint is not None
    assert reader in refused.hint
    assert refused.hint.endswith(f"; leave {key} out of extraLabels")


def test_the_refusal_is_located_at_the_key_and_validate_exits_1(tmp_path: Path) -> None:
    file = tmp_path / "lab.yaml"
    file.write_text(dump(_labelled({"app.kubernetes.io/managed-by": "helm"})), encoding="utf-8")
    line = next(
        n
        for n, text in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if "managed-by: helm" in text
    )
    result = run_cli("validate", str(file))
    assert result.code == 1
    column = file.read_text(encoding="utf-8").splitlines()[line - 1].index("app.") + 1
    assert (
        f"lab.yaml:{line}:{column}: spec.node.monitoring.extraLabels.app.kubernetes.io/managed-by: "
        "the entry changes the label app.kubernetes.io/managed-by: 'gpuconf' gpuconf writes to "
        "'helm'" in result.out + result.err
    )


def test_an_extra_label_repeating_gpuconf_s_own_value_warns_and_changes_no_byte() -> None:
    document = _labelled({"gpuconf.dev/cluster": "lab", "app.kubernetes.io/managed-by": "gpuconf"})
    outcome = check(document)
    assert not isinstance(outcome, list), [d.as_text() for d in outcome]
    warned = [d for d in outcome.warnings if "extraLabels" in format_path(d.path)]
    assert [(d.severity, format_path(d.path)) for d in warned] == [
        (Severity.WARNING, "spec.node.monitoring.extraLabels.app.kubernetes.io/managed-by"),
        (Severity.WARNING, "spec.node.monitoring.extraLabels.gpuconf.dev/cluster"),
    ]
    assert rendered(document) == rendered(_labelled({}))


@pytest.mark.parametrize("dashboard", [True, False])
def test_labels_nothing_selects_on_take_the_user_s_value(dashboard: bool) -> None:
    """grafana_dashboard takes the value the site's Grafana sidecar loads (its
    sidecar.dashboards.labelValue); part-of and component are the user's grouping."""
    mine = {
        "grafana_dashboard": "true",
        "app.kubernetes.io/part-of": "ml-platform",
        "app.kubernetes.io/component": "gpu-telemetry",
    }
    assert not OWNER_LABELS.keys() & mine.keys()
    document = _labelled(mine, dashboard=dashboard)
    outcome = check(document)
    assert not isinstance(outcome, list), [d.as_text() for d in outcome]
    assert not [d for d in outcome.warnings if "extraLabels" in format_path(d.path)]
    objects = _monitoring_objects(rendered(document))
    kinds = ["PodMonitor", "PodMonitor", "PrometheusRule"] + (["ConfigMap"] if dashboard else [])
    assert sorted(o["kind"] for o in objects) == sorted(kinds)
    for obj in objects:
        assert obj["metadata"]["labels"].items() >= mine.items()


def test_labels_of_the_users_own_are_added_to_every_monitoring_object_beside_gpuconf_s() -> None:
    extra = {"release": "kube-prometheus-stack", "team": "gpu"}
    plain, labelled = rendered(_labelled({})), rendered(_labelled(extra))
    paths = [
        p
        for p in plain
        if p.startswith("monitoring/") and load_yaml(plain[p])["kind"] in MONITORING_OBJECTS
    ]
    assert len(paths) == 4
    for path in paths:
        own = load_yaml(plain[path])["metadata"]["labels"]
        assert load_yaml(labelled[path])["metadata"]["labels"] == {**own, **extra}
