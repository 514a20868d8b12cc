"""Every file of every rendered cluster is admitted by kube-apiserver itself: server-side apply
as gpuconf with dryRun=All and strict field validation, after the CRDs the trees use are
installed. Admission runs in full on a dry run (defaulting, validation, CEL, admission
plugins and policies); only storing is skipped."""

from __future__ import annotations

import pytest
import yaml
from builders import RENDERED, cluster_file, read_tree, rendered
from control_plane.manifests import (
    CRDS,
    admission_refusals,
    ensure_namespaces,
    install_crds,
    is_object,
    tree_objects,
)
from control_plane.server import Server

CLUSTERS = sorted(p.name for p in RENDERED.iterdir() if (p / "kustomization.yaml").is_file())


@pytest.fixture
def with_crds(api_server: Server) -> Server:
    install_crds(api_server)
    return api_server


def test_every_vendored_crd_is_served(with_crds: Server) -> None:
    crds = [
        crd
        for path in sorted(CRDS.glob("*.yaml"))
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if crd
    ]
    assert crds, "no CRDs vendored in tests/control_plane/crds"
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in (v["name"] for v in crd["spec"]["versions"] if v["served"]):
            assert (
                with_crds.kind(f"{group}/{version}", kind).plural == crd["spec"]["names"]["plural"]
            )


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_rendered_file_is_admitted_by_a_dry_run_apply(
    with_crds: Server, cluster: str
) -> None:
    tree = read_tree(RENDERED / cluster)
    objects = tree_objects(tree)
    assert objects
    ensure_namespaces(with_crds, objects)
    refusals = admission_refusals(with_crds, tree, dry_run=True)
    assert not refusals, f"kube-apiserver refused rendered/{cluster}:\n" + "\n".join(refusals)


@pytest.mark.parametrize(("version", "api"), [("1.32", "v1beta1"), ("1.33", "v1beta2")])
def test_dra_objects_rendered_for_an_older_kubernetes_are_admitted_in_its_beta_version(
    with_crds: Server, version: str, api: str
) -> None:
    """No example targets DRA before 1.34, so the DRA example is rendered for 1.32 and 1.33
    here. The 1.34 server serves those versions (--runtime-config) with 1.34's validation, the
    closest a single control plane comes to the older servers."""
    document = cluster_file("dra-lab")
    document["spec"]["kubernetes"]["version"] = version
    # Beta and off by default there: the cluster declares it on (the server runs with it).
    document["spec"]["kubernetes"]["featureGates"] = {"DynamicResourceAllocation": True}
    tree = rendered(document)
    objects = tree_objects(tree)
    assert {
        d["apiVersion"] for _, d in objects if d["apiVersion"].startswith("resource.k8s.io")
    } == {f"resource.k8s.io/{api}"}
    ensure_namespaces(with_crds, objects)
    refusals = admission_refusals(with_crds, tree, dry_run=True)
    assert not refusals, f"kube-apiserver refused dra-lab for {version}:\n" + "\n".join(refusals)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_object_file_is_a_kustomization_resource(cluster: str) -> None:
    """What Argo CD and Flux apply is the kustomization's list, which the dry run applies: every
    file holding a Kubernetes object is on it, and only the files for other tools are not
    (Kueue's Configuration, the GPU Operator's Helm values and ClusterPolicy patch)."""
    tree = read_tree(RENDERED / cluster)
    resources = set(yaml.safe_load(tree["kustomization.yaml"])["resources"])
    holding_objects = {
        path
        for path, data in tree.items()
        if path.endswith(".yaml") and is_object(yaml.safe_load(data))
    }
    assert holding_objects - {"kustomization.yaml"} == resources


def test_an_object_the_server_lacks_a_kind_for_is_reported_with_its_file(
    api_server: Server,
) -> None:
    tree = {
        "cluster/thing.yaml": b"apiVersion: example.com/v1\nkind: Thing\nmetadata:\n  name: x\n",
    }
    (refusal,) = admission_refusals(api_server, tree, dry_run=True)
    assert refusal.startswith("cluster/thing.yaml: Thing x: refused (404)")


def test_a_field_the_server_does_not_keep_is_reported(with_crds: Server) -> None:
    """DeviceClass.spec.extendedResourceName is alpha in 1.34 (DRAExtendedResource, off): the
    server admits the class and silently clears the field, which the check reports."""
    device_class = yaml.safe_load(
        (RENDERED / "dra-lab" / "cluster" / "deviceclass-big-memory.yaml").read_bytes()
    )
    device_class["spec"]["extendedResourceName"] = "example.com/gpu"
    tree = {"cluster/deviceclass.yaml": yaml.safe_dump(device_class).encode()}
    (problem,) = admission_refusals(with_crds, tree, dry_run=True)
    assert problem == (
        "cluster/deviceclass.yaml: DeviceClass big-memory: admitted without .spec.extendedResourceName"
    )


def test_a_warning_from_the_server_is_reported(with_crds: Server) -> None:
    """A deprecated or non-functional setting is admitted with a Warning header (pkg/api/pod/
    warnings.go for pod templates); the check reports it like a refusal."""
    objects = tree_objects(read_tree(RENDERED / "lab"))
    ensure_namespaces(with_crds, objects)
    path = "pools/t4/daemonset-gpuconf-setup.yaml"
    daemonset = next(d for f, d in objects if f == path)
    template = daemonset["spec"]["template"]["metadata"]
    template.setdefault("annotations", {})["scheduler.alpha.kubernetes.io/critical-pod"] = ""
    (problem,) = admission_refusals(with_crds, {path: yaml.safe_dump(daemonset).encode()}, True)
    assert problem.startswith(f"{path}: DaemonSet gpuconf-system/")
    assert "admitted with a warning" in problem
    assert "scheduler.alpha.kubernetes.io/critical-pod" in problem
