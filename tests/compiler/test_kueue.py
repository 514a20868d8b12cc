"""Kueue from the same classes: flavors per pool, a ClusterQueue per tenant, a LocalQueue per quota
namespace, checked against the declared release's CRD schemas and against what Kueue's webhook
refuses (kubernetes-sigs/kueue pkg/webhooks/clusterqueue_webhook.go)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from builders import (
    cluster,
    cluster_file,
    compile_folder,
    errors,
    load_yaml,
    pool,
    rendered,
    site_block,
    valid,
)
from crd_schemas import crd_errors

from gpuconf.compiler.explain import explain_text
from gpuconf.compiler.kueue.admission import Capacity, refusals
from gpuconf.compiler.kueue.crd_schema import CrdSchemas
from gpuconf.compiler.kueue.limits import QUEUE_LIMITS
from gpuconf.formats.yaml_writer import dump

KUEUE_GROUP = "kueue.x-k8s.io/"


def _kueue_objects(tree: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    objects = {}
    for path, data in tree.items():
        if path.startswith("kueue/") and path.endswith(".yaml"):
            obj = load_yaml(data)
            if obj["apiVersion"].startswith(KUEUE_GROUP):
                objects[path] = obj
    return objects


def _nominal(objects: dict[str, dict[str, Any]]) -> dict[tuple[str, str, str], int]:
    """(queue, resource, flavor) -> nominalQuota."""
    found = {}
    for obj in objects.values():
        if obj["kind"] != "ClusterQueue":
            continue
        for group in obj["spec"]["resourceGroups"]:
            for flavor in group["flavors"]:
                for quota in flavor["resources"]:
                    key = (obj["metadata"]["name"], quota["name"], flavor["name"])
                    found[key] = quota["nominalQuota"]
    return found


def _two_pool_class(**kueue: Any) -> dict[str, Any]:
    """One class over two pools (8 GPUs on h100, 4 on a100) with quotas that must be split."""
    return cluster(
        [pool("h100", "H100-SXM5-80GB", 8), pool("a100", "A100-SXM4-80GB", 4)],
        [{"name": "big", "select": {"model": ["H100-SXM5-80GB", "A100-SXM4-80GB"]}}],
        kueue={"version": "v0.19.2", **kueue},
        quotas=[
            {"namespace": "team-a", "classes": {"big": 6}},
            {"namespace": "team-b", "classes": {"big": 5}},
        ],
    )


def test_the_training_fleet_renders_a_flavor_per_pool_a_queue_per_team_and_a_local_queue_per_namespace() -> (
    None
):
    objects = _kueue_objects(rendered(cluster_file("training-fleet")))
    kinds = sorted(
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in objects.values()
    )
    assert kinds == [
        ("ClusterQueue", "", "language"),
        ("ClusterQueue", "", "research"),
        ("ClusterQueue", "", "vision"),
        ("LocalQueue", "language-eval", "default"),
        ("LocalQueue", "language-train", "default"),
        ("LocalQueue", "research", "default"),
        ("LocalQueue", "vision", "default"),
        ("ResourceFlavor", "", "a100"),
        ("ResourceFlavor", "", "h100"),
        ("ResourceFlavor", "", "l40s"),
    ]


def test_every_kueue_object_passes_the_crd_schema_of_the_declared_release() -> None:
    objects = _kueue_objects(rendered(cluster_file("training-fleet")))
    assert objects
    for path, obj in objects.items():
        assert obj["apiVersion"] == "kueue.x-k8s.io/v1beta2", path
        assert crd_errors(obj) == [], path
        assert list(CrdSchemas("v0.19.2").errors(obj)) == [], path


def test_an_older_release_gets_v1beta1_objects_with_its_cohort_field_and_passes_its_own_schema() -> (
    None
):
    document = cluster_file("training-fleet")
    document["spec"]["kueue"]["version"] = "v0.14.8"
    objects = _kueue_objects(rendered(document))
    queue = objects["kueue/clusterqueue-vision.yaml"]
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert queue["spec"]["cohort"] == "training"
    assert "cohortName" not in queue["spec"]
    schemas = CrdSchemas("v0.14.8")
    for path, obj in objects.items():
        assert list(schemas.errors(obj)) == [], path


def test_queues_cover_every_class_and_namespace_of_the_quotas_and_sum_to_what_explain_prints() -> (
    None
):
    document = cluster_file("training-fleet")
    validated = valid(document)
    objects = _kueue_objects(rendered(document))
    nominal = _nominal(objects)
    by_queue: dict[str, dict[str, int]] = {}
    for quota in document["spec"]["quotas"]:
        queue = quota.get("clusterQueue", quota["namespace"])
        for name, count in quota["classes"].items():
            by_queue.setdefault(queue, {})
            by_queue[queue][name] = by_queue[queue].get(name, 0) + count
        local = objects[f"kueue/localqueue-{quota['namespace']}.yaml"]
        assert local["spec"]["clusterQueue"] == queue
        selector = objects[f"kueue/clusterqueue-{queue}.yaml"]["spec"]["namespaceSelector"]
        assert quota["namespace"] in selector["matchExpressions"][0]["values"]
    domain = document["spec"]["resourceDomain"]
    text = explain_text(validated)
    for queue, classes in by_queue.items():
        for name, count in classes.items():
            rendered_total = sum(
                n
                for (q, resource, _), n in nominal.items()
                if q == queue and resource == f"{domain}/{name}"
            )
            assert rendered_total == count, (queue, name)
            section = text.split(f"{name}: Kueue ClusterQueues")[1].split("\n\n")[0]
            assert re.search(rf"^  {queue}: nominal {count}\b", section, re.MULTILINE), (
                queue,
                name,
            )


def test_a_class_over_two_pools_fills_them_in_order_without_exceeding_either() -> None:
    objects = _kueue_objects(rendered(_two_pool_class()))
    nominal = _nominal(objects)
    assert nominal == {
        ("team-a", "gpuconf.dev/big", "h100"): 6,
        ("team-a", "gpuconf.dev/big", "a100"): 0,
        ("team-b", "gpuconf.dev/big", "h100"): 2,
        ("team-b", "gpuconf.dev/big", "a100"): 3,
    }
    text = explain_text(valid(_two_pool_class()))
    assert "  team-b: nominal 5 (h100: 2, a100: 3), lends up to 5, may borrow 6" in text


def test_explain_says_what_each_queue_may_borrow_within_the_limits() -> None:
    text = explain_text(valid(cluster_file("training-fleet")))
    section = text.split("h100: Kueue ClusterQueues in cohort training (capacity 32)\n")[1].split(
        "\n\n"
    )[0]
    # Vision lends at most 8 of its 16; language borrows at most 8; research has no limit.
    assert section.splitlines() == [
        "  vision: nominal 16, lends up to 8, may borrow 16",
        "  language: nominal 12, lends up to 12, may borrow 8",
        "  research: nominal 4, lends up to 4, may borrow 20",
    ]


def test_a_flavor_carries_the_pools_labels_taints_and_tolerations() -> None:
    objects = _kueue_objects(rendered(cluster_file("training-fleet")))
    flavor = objects["kueue/resourceflavor-h100.yaml"]["spec"]
    assert flavor == {
        "nodeLabels": {"node.example.com/gpu": "h100"},
        "nodeTaints": [{"effect": "NoSchedule", "key": "example.com/gpu-only"}],
        "tolerations": [
            {"effect": "NoSchedule", "key": "example.com/gpu-only", "operator": "Exists"}
        ],
    }
    assert objects["kueue/resourceflavor-a100.yaml"]["spec"] == {
        "nodeLabels": {"gpuconf.dev/pool": "a100"}
    }


def test_an_object_the_release_schema_refuses_is_a_located_error_and_nothing_is_written(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    # A site's template gives the h100 flavor 9 tolerations: Kueue's ResourceFlavor holds at most 8.
    site = tmp_path / "site"
    site.mkdir()
    site_block(
        site,
        "resourceflavor.yaml.j2",
        "body",
        "spec:\n  nodeLabels: {{ node_labels | yaml }}\n"
        "  tolerations: {{ (tolerations * 9) | yaml }}",
    )
    document = cluster_file("training-fleet")
    document["spec"]["templates"] = "site"
    (tmp_path / "c.yaml").write_text(dump(document))
    compiled = compile_folder(tmp_path, "c.yaml")
    texts = [d.as_text() for d in compiled.diagnostics]
    assert not compiled.rendered
    assert any(
        t.startswith("c.yaml:")
        and "spec.kueue: ResourceFlavor h100: spec.tolerations: " in t
        and "is too long (Kueue v0.19.2's CRD schema)" in t
        for t in texts
    ), texts


def _queue(
    resources: list[dict[str, Any]], flavor: str = "h100", covered: list[str] | None = None
) -> dict[str, Any]:
    return {
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "cohortName": "c",
            "namespaceSelector": {
                "matchExpressions": [{"key": "k", "operator": "In", "values": ["ns"]}]
            },
            "resourceGroups": [
                {
                    "coveredResources": covered or [r["name"] for r in resources],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        },
    }


FLAVOR = {"kind": "ResourceFlavor", "metadata": {"name": "h100"}, "spec": {}}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [FLAVOR, _queue([{"name": "r", "nominalQuota": 2, "lendingLimit": 3}])],
            "ClusterQueue q spec.resourceGroups.0.flavors.0.resources.0.lendingLimit: must be at most the nominalQuota",
            id="lending-above-nominal",
        ),
        pytest.param(
            [_queue([{"name": "r", "nominalQuota": 2}])],
            "ClusterQueue q spec.resourceGroups.0.flavors.0: no ResourceFlavor is named 'h100'",
            id="missing-flavor",
        ),
        pytest.param(
            [FLAVOR, _queue([{"name": "r", "nominalQuota": 2}], covered=["r", "s"])],
            "ClusterQueue q spec.resourceGroups.0.flavors.0: quotas name ['r'], not the covered resources ['r', 's'] in order",
            id="flavor-not-covering-every-resource",
        ),
        pytest.param(
            [FLAVOR, _queue([{"name": "r", "nominalQuota": 9}])],
            "ResourceFlavor h100 : nominal quotas of r add up to 9, more than the 8 its pool holds",
            id="over-capacity",
        ),
        pytest.param(
            [
                FLAVOR,
                _queue([{"name": "r", "nominalQuota": 2}]),
                {
                    "kind": "LocalQueue",
                    "metadata": {"name": "default", "namespace": "other"},
                    "spec": {"clusterQueue": "q"},
                },
            ],
            "LocalQueue other/default spec.clusterQueue: ClusterQueue q does not admit namespace 'other'",
            id="local-queue-outside-selector",
        ),
        pytest.param(
            [
                {
                    "kind": "ResourceFlavor",
                    "metadata": {"name": "h100"},
                    "spec": {
                        "nodeTaints": [
                            {"key": "k", "value": "a", "effect": "NoSchedule"},
                            {"key": "k", "value": "a", "effect": "NoExecute"},
                            {"key": "k", "value": "b", "effect": "NoSchedule"},
                        ]
                    },
                }
            ],
            "ResourceFlavor h100 spec.nodeTaints.2: taints must be unique by key and effect pair",
            id="taints-repeating-a-key-and-effect",
        ),
    ],
)
def test_what_kueue_refuses_beyond_its_schema_is_found(
    objects: list[dict[str, Any]], expected: str
) -> None:
    found = [
        f"{r.object} {r.path}: {r.message}"
        for r in refusals(objects, {("r", "h100"): Capacity(8, False)}, QUEUE_LIMITS["v0.19.2"])
    ]
    assert found == [expected]


def test_oversubscription_the_class_declares_is_not_refused() -> None:
    objects = [FLAVOR, _queue([{"name": "r", "nominalQuota": 9}])]
    capacity = {("r", "h100"): Capacity(8, True)}
    assert list(refusals(objects, capacity, QUEUE_LIMITS["v0.19.2"])) == []


def test_dra_classes_are_mapped_for_kueue_and_an_alpha_gate_is_written_where_the_release_needs_it() -> (
    None
):
    document = _two_pool_class(version="v0.14.8", featureGates={"DynamicResourceAllocation": True})
    document["spec"]["allocation"] = "dra"
    del document["spec"]["plugin"]
    tree = rendered(document)
    configuration = load_yaml(tree["kueue-configuration.yaml"])
    assert configuration == {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "featureGates": {"DynamicResourceAllocation": True},
        "resources": {
            "deviceClassMappings": [{"deviceClassNames": ["big"], "name": "gpuconf.dev/big"}]
        },
    }
    assert "kueue-configuration.yaml" not in load_yaml(tree["kustomization.yaml"])["resources"]
    assert ("team-a", "gpuconf.dev/big", "h100") in _nominal(_kueue_objects(tree))


@pytest.mark.parametrize(
    ("kueue", "expected"),
    [
        pytest.param(
            {"version": "v0.13.10"},
            "spec.kueue.version: Kueue v0.13.10 cannot count DRA devices: deviceClassMappings came in v0.14.0 "
            "(hint: use Kueue v0.19.2, whose KueueDRAIntegration gate is on by default)",
            id="release-without-device-class-mappings",
        ),
        pytest.param(
            {"version": "v0.14.8"},
            "spec.kueue.version: Kueue v0.14.8 counts DRA devices only with its feature gate "
            "DynamicResourceAllocation on (off by default) (hint: install Kueue with "
            "DynamicResourceAllocation=true and declare it: spec.kueue.featureGates: "
            "{DynamicResourceAllocation: true}; or use Kueue v0.19.2)",
            id="alpha-gate-not-declared",
        ),
        pytest.param(
            {"version": "v0.19.2", "featureGates": {"KueueDRAIntegration": False}},
            "spec.kueue.featureGates: Kueue v0.19.2 counts DRA devices only with its feature gate "
            "KueueDRAIntegration on (on by default, declared off) (hint: install Kueue with "
            "KueueDRAIntegration=true and declare it: spec.kueue.featureGates: {KueueDRAIntegration: true})",
            id="beta-gate-declared-off",
        ),
    ],
)
def test_dra_quota_in_kueue_needs_a_release_and_gate_that_count_devices(
    kueue: dict[str, Any], expected: str
) -> None:
    document = _two_pool_class()
    document["spec"]["kueue"] = kueue
    document["spec"]["allocation"] = "dra"
    del document["spec"]["plugin"]
    found = [re.sub(r"^cluster\.yaml:\d+:\d+: ", "", d.as_text()) for d in errors(document)]
    assert found == [expected]


def test_without_kueue_no_queue_is_rendered() -> None:
    document = copy.deepcopy(_two_pool_class())
    del document["spec"]["kueue"]
    assert not [p for p in rendered(document) if p.startswith("kueue/")]


def _admits(queues: dict[str, dict[str, Any]], queue: str) -> dict[str, int]:
    """What a ClusterQueue may admit per resource, as Kueue reckons it for each flavor: its
    nominalQuota, plus what it may borrow in its cohort, the other queues' lendable quota
    (lendingLimit, else nominalQuota) capped by its own borrowingLimit where it sets one."""
    own = queues[queue]["spec"]
    cohort = own.get("cohortName")
    admits: dict[str, int] = {}
    for group in own["resourceGroups"]:
        for flavor in group["flavors"]:
            for quota in flavor["resources"]:
                lendable = 0
                for other, cq in queues.items():
                    if other == queue or cohort is None or cq["spec"].get("cohortName") != cohort:
                        continue
                    for other_group in cq["spec"]["resourceGroups"]:
                        for other_flavor in other_group["flavors"]:
                            if other_flavor["name"] != flavor["name"]:
                                continue
                            for lent in other_flavor["resources"]:
                                if lent["name"] == quota["name"]:
                                    lendable += lent.get("lendingLimit", lent["nominalQuota"])
                borrow = min(lendable, quota.get("borrowingLimit", lendable))
                name = quota["name"]
                admits[name] = admits.get(name, 0) + quota["nominalQuota"] + borrow
    return admits


def test_each_namespace_quota_admits_what_its_queue_may_admit_nominal_plus_borrowable() -> None:
    document = cluster_file("training-fleet")
    tree = rendered(document)
    queues = {
        obj["metadata"]["name"]: obj
        for obj in _kueue_objects(tree).values()
        if obj["kind"] == "ClusterQueue"
    }
    for quota in document["spec"]["quotas"]:
        queue = quota.get("clusterQueue", quota["namespace"])
        hard = load_yaml(tree[f"quotas/{quota['namespace']}.yaml"])["spec"]["hard"]
        expected = {f"requests.{r}": str(n) for r, n in _admits(queues, queue).items()}
        assert hard == expected, quota["namespace"]


def test_the_quotas_page_shows_what_explain_prints() -> None:
    from builders import REPO, run_cli

    page = (REPO / "docs" / "quotas.md").read_text(encoding="utf-8")
    sample = re.search(r"```console\n\$ gpuconf (explain \S+)\n(.*?)```", page, re.S)
    assert sample
    result = run_cli(*sample[1].split(), cwd=REPO)
    assert result.code == 0
    assert result.out == sample[2]


def test_the_crd_schemas_defaults_and_cel_rules_apply_as_the_api_server_applies_them() -> None:
    schemas = CrdSchemas("v0.19.2")
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q"},
        "spec": {
            "namespaceSelector": {},
            # reclaimWithinCohort defaults to Never, which forbids preempting while borrowing.
            "preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
            "resourceGroups": [
                {
                    "coveredResources": ["a", "b"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [{"name": "a", "nominalQuota": 1, "borrowingLimit": 2}],
                        }
                    ],
                }
            ],
        },
    }
    assert [(e.path, e.message) for e in schemas.errors(queue)] == [
        ("spec", "borrowingLimit must be nil when cohort is empty"),
        ("spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"),
        (
            "spec.resourceGroups.0",
            "flavors must have the same number of resources as the coveredResources",
        ),
    ]
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "f"},
        "spec": {"tolerations": [{"operator": "Equal", "effect": "NoSchedule"}]},
    }
    assert [e.message for e in schemas.errors(flavor)] == [
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
    ]


def test_a_site_template_is_checked_against_the_declared_releases_crds_when_rendered(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    from builders import run_cli

    site = tmp_path / "site"
    site.mkdir()
    # Without its cohort a ClusterQueue's limits break the release's CEL rule.
    site_block(
        site,
        "clusterqueue.yaml.j2",
        "body",
        "spec:\n  namespaceSelector: {{ namespace_selector | yaml }}\n"
        "  resourceGroups: {{ resource_groups | yaml }}",
    )
    document = cluster_file("training-fleet")
    document["spec"]["templates"] = "site"
    (tmp_path / "c.yaml").write_text(dump(document))
    refusal = (
        "spec.kueue: ClusterQueue language: spec: borrowingLimit must be nil when cohort is "
        "empty (Kueue v0.19.2's CRD schema)"
    )
    result = run_cli("render", "c.yaml", "-o", "out", cwd=tmp_path)
    assert result.code == 1
    assert refusal in result.err
    assert not (tmp_path / "out").exists()
    # Validate checks the cluster file, which is fine; it renders nothing (test_start_up.py).
    assert run_cli("validate", "c.yaml", cwd=tmp_path).code == 0
    (site / "clusterqueue.yaml.j2").unlink()
    assert run_cli("render", "c.yaml", "-o", "out", cwd=tmp_path).code == 0
