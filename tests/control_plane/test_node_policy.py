"""The node runtime's ValidatingAdmissionPolicy, enforced by the real admission chain on real
requests as the node's service account: with a token bound to a pod on its Node (as the
kubelet mounts it), through gpuconf's own annotate code, and by impersonation. It may change
its own Node's gpuconf.dev/ annotations, and nothing else on that or any other Node."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import RENDERED, load_yaml, rendered
from control_plane.manifests import delete_objects
from control_plane.server import Refused, Server
from in_pod import as_pod_of
from many_pools import many_pools

from gpuconf.node.node_annotation import PENDING_ANNOTATION, annotate_pending
from gpuconf.node.node_labels import Published, publish_labels

LAB = RENDERED / "lab"
POLICY_FILES = [
    "namespaces/gpuconf-system.yaml",
    "cluster/serviceaccount-gpuconf-node.yaml",
    "cluster/clusterrole-gpuconf-node.yaml",
    "cluster/clusterrolebinding-gpuconf-node.yaml",
    "cluster/validatingadmissionpolicy-gpuconf-node.yaml",
    "cluster/validatingadmissionpolicybinding-gpuconf-node.yaml",
]
NAMESPACE, ACCOUNT = "gpuconf-system", "gpuconf-node"
OWN, OTHER = "gpu-node-own", "gpu-node-other"
WRONG_NODE = "gpuconf-node may change only the Node its pod runs on"
WRONG_FIELD = "gpuconf-node may change only gpuconf.dev/ annotations"
MERGE = "application/strategic-merge-patch+json"
POOL_LABEL = "gpuconf.dev/pool"


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            # In lab's pool t4: its DaemonSet selects gpuconf.dev/pool=t4.
            "labels": {"pool": "h100", POOL_LABEL: "t4"},
            "annotations": {"example.com/owner": "ops"},
        },
    }


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpuconf-node-policy-test", "namespace": NAMESPACE},
        "spec": {
            "nodeName": OWN,
            "serviceAccountName": ACCOUNT,
            "automountServiceAccountToken": False,
            "containers": [{"name": "node", "image": "registry.k8s.io/pause:3.10"}],
        },
    }


def _patch(
    server: Server, node: str, patch: dict[str, Any], dry_run: bool = False
) -> dict[str, Any]:
    query = [("dryRun", "All")] if dry_run else []
    path = server.path("v1", "Node", "", node)
    return server.request("PATCH", path, patch, query, MERGE).body


def _annotate(key: str, value: str = "x") -> dict[str, Any]:
    return {"metadata": {"annotations": {key: value}}}


@pytest.fixture
def policy(api_server: Server) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    applied = [(f, yaml.safe_load((LAB / f).read_text(encoding="utf-8"))) for f in POLICY_FILES]
    made = [("test", _node(OWN)), ("test", _node(OTHER)), ("test", _pod())]
    for _, document in applied:
        api_server.apply(document)
    for _, document in made:
        api_server.create(document)
    try:
        yield applied + made
    finally:
        delete_objects(api_server, applied + made)


@pytest.fixture
def node_token(api_server: Server, policy: Any) -> str:
    """A token for the node's service account bound to a pod on OWN, as the kubelet gets one:
    the server adds the pod's node to the token's user info (authentication.kubernetes.io/
    node-name), which is what the policy checks."""
    return api_server.pod_token(NAMESPACE, ACCOUNT, "gpuconf-node-policy-test")


@pytest.fixture
def as_node(api_server: Server, kubeconfig: Path, node_token: str) -> Server:
    """The node's service account, once the server enforces the policy (a new policy takes
    effect when the API server's informers see it; a dry run is admitted or refused like a
    real request, and changes nothing)."""
    server = Server.with_token(kubeconfig, node_token)
    deadline = time.monotonic() + 30
    while True:
        try:
            _patch(server, OTHER, _annotate("gpuconf.dev/probe"), dry_run=True)
        except Refused as refused:
            if WRONG_NODE in refused.message:
                return server
        if time.monotonic() > deadline:
            raise TimeoutError("the node policy was not enforced within 30 s")
        time.sleep(0.2)


@pytest.fixture
def in_cluster(
    monkeypatch: pytest.MonkeyPatch, kubeconfig: Path, node_token: str, tmp_path: Path
) -> Path:
    """What the node runtime's pod sees: the service host and port, and the mounted token."""
    return as_pod_of(monkeypatch, tmp_path / "serviceaccount", kubeconfig, node_token)


def _annotations(server: Server, node: str) -> dict[str, str]:
    found = server.get("v1", "Node", "", node)
    assert found is not None
    annotations: dict[str, str] = found["metadata"].get("annotations", {})
    return annotations


@pytest.mark.usefixtures("in_cluster")
def test_the_node_runtime_annotates_its_own_node(api_server: Server, as_node: Server) -> None:
    annotate_pending(OWN, [{"resource": "nvidia.com/gpu", "replicas": 4}])
    assert (
        _annotations(api_server, OWN)[PENDING_ANNOTATION]
        == '[{"replicas":4,"resource":"nvidia.com/gpu"}]'
    )


@pytest.mark.usefixtures("in_cluster")
def test_the_node_runtime_is_refused_another_node(
    api_server: Server, as_node: Server, caplog: pytest.LogCaptureFixture
) -> None:
    before = _annotations(api_server, OTHER)
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_annotation"):
        annotate_pending(OTHER, [{"resource": "nvidia.com/gpu", "replicas": 4}])
    assert _annotations(api_server, OTHER) == before
    (record,) = caplog.records
    assert "could not annotate node gpu-node-other" in record.getMessage()
    assert WRONG_NODE in record.getMessage()


@pytest.mark.usefixtures("as_node")
def test_after_a_token_the_server_refuses_the_next_call_sends_the_one_the_kubelet_wrote(
    api_server: Server, in_cluster: Path, node_token: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The kubelet rotated the token and the old one expired: the call that sent it fails and
    is logged; the next one, with a client made for it, reads the file again."""
    (in_cluster / "token").write_text("a-token-this-server-never-issued", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gpuconf.node.node_annotation"):
        annotate_pending(OWN, [{"resource": "nvidia.com/gpu", "replicas": 4}])
    assert "the API server answered 401" in caplog.text
    (in_cluster / "token").write_text(node_token, encoding="utf-8")
    annotate_pending(OWN, [{"resource": "nvidia.com/gpu", "replicas": 2}])
    assert (
        _annotations(api_server, OWN)[PENDING_ANNOTATION]
        == '[{"replicas":2,"resource":"nvidia.com/gpu"}]'
    )


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(_annotate("example.com/owner", "me"), id="another-annotation"),
        pytest.param({"metadata": {"labels": {"example.com/team": "x"}}}, id="a-label"),
        pytest.param({"spec": {"unschedulable": True}}, id="cordon"),
    ],
)
def test_on_its_own_node_it_may_change_nothing_but_gpuconf_annotations(
    api_server: Server, as_node: Server, patch: dict[str, Any]
) -> None:
    before = api_server.get("v1", "Node", "", OWN)
    with pytest.raises(Refused) as refused:
        _patch(as_node, OWN, patch)
    # A policy's denial is 422 (Invalid) unless the validation names another reason.
    assert refused.value.status == 422
    assert "is forbidden: ValidatingAdmissionPolicy" in refused.value.message
    assert WRONG_FIELD in refused.value.message
    after = api_server.get("v1", "Node", "", OWN)
    assert before is not None
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_its_own_gpuconf_annotation_may_be_set_by_a_direct_patch(as_node: Server) -> None:
    patched = _patch(as_node, OWN, _annotate("gpuconf.dev/inventory-drift", "false"))
    assert patched["metadata"]["annotations"]["gpuconf.dev/inventory-drift"] == "false"


def _impersonating(kubeconfig: Path, node: str | None) -> Server:
    headers = {"Impersonate-User": f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"}
    if node is not None:
        headers["Impersonate-Extra-authentication.kubernetes.io%2fnode-name"] = node
    return Server.from_kubeconfig(kubeconfig, headers)


def test_impersonating_the_account_on_its_node_the_policy_admits_only_that_node(
    kubeconfig: Path, as_node: Server
) -> None:
    server = _impersonating(kubeconfig, OWN)
    _patch(server, OWN, _annotate("gpuconf.dev/probe"), dry_run=True)
    with pytest.raises(Refused, match=WRONG_NODE):
        _patch(server, OTHER, _annotate("gpuconf.dev/probe"), dry_run=True)


def test_the_account_without_a_pods_node_is_refused_every_node(
    kubeconfig: Path, as_node: Server
) -> None:
    """A token not bound to a pod on a Node (a plain service-account token) carries no node.
    With no user extra at all, the policy's first expression fails to evaluate ("no such key:
    extra") rather than being false: the failurePolicy (Fail) still refuses the request."""
    server = _impersonating(kubeconfig, None)
    for node in (OWN, OTHER):
        with pytest.raises(Refused) as refused:
            _patch(server, node, _annotate("gpuconf.dev/probe"), dry_run=True)
        assert refused.value.status == 422
        assert "gpuconf-node-own-node-gpuconf-system' denied request" in refused.value.message


def _labels(server: Server, node: str) -> dict[str, str]:
    found = server.get("v1", "Node", "", node)
    assert found is not None
    labels: dict[str, str] = found["metadata"].get("labels", {})
    return labels


@pytest.mark.usefixtures("in_cluster")
def test_the_node_runtime_publishes_its_own_labels_and_takes_back_only_those(
    api_server: Server, as_node: Server
) -> None:
    """gpuconf node's label writer (node/node_labels.py), as the node's service account through
    the real admission chain: GFD's keys and gpuconf's on its own Node, a key it no longer wants
    removed, the label it does not own ("pool") left as it was."""
    wanted = {
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.count": "2",
        "gpuconf.dev/pool": "t4",
        "class.gpuconf.dev/t4-shared": "true",
    }
    assert publish_labels(OWN, wanted) is Published.YES
    assert _labels(api_server, OWN) == {"pool": "h100", **wanted}
    published = publish_labels(
        OWN, {k: v for k, v in wanted.items() if k != "nvidia.com/gpu.count"}
    )
    assert published is Published.YES
    labels = _labels(api_server, OWN)
    assert "nvidia.com/gpu.count" not in labels
    assert labels["pool"] == "h100"
    # The same writer on another Node is refused by the policy, and nothing there changes.
    before = _labels(api_server, OTHER)
    assert publish_labels(OTHER, wanted) is Published.FAILED
    assert _labels(api_server, OTHER) == before


def test_a_label_outside_the_published_set_is_refused_on_its_own_node(as_node: Server) -> None:
    with pytest.raises(Refused) as refused:
        _patch(as_node, OWN, {"metadata": {"labels": {"nvidia.com/gpu.deploy.driver": "false"}}})
    assert refused.value.status == 422
    assert WRONG_FIELD in refused.value.message


def _refused(server: Server, patch: dict[str, Any]) -> Refused | None:
    """How the server answers a dry run of `patch` to OWN: None where it admits it."""
    try:
        _patch(server, OWN, patch, dry_run=True)
    except Refused as refused:
        return refused
    return None


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param({POOL_LABEL: "a100"}, id="pool-label-changed"),
        pytest.param({POOL_LABEL: None}, id="pool-label-removed"),
        pytest.param({"class.gpuconf.dev/a100-train": "8"}, id="class-its-pool-does-not-serve"),
    ],
)
def test_its_bound_token_may_not_move_its_node_out_of_its_pool(
    api_server: Server, as_node: Server, labels: dict[str, str | None]
) -> None:
    """A node runtime that could rewrite gpuconf.dev/pool (what lab's pool selects its nodes
    by) would take its Node into another pool's DaemonSets, workloads and quota."""
    before = api_server.get("v1", "Node", "", OWN)
    with pytest.raises(Refused) as refused:
        _patch(as_node, OWN, {"metadata": {"labels": labels}})
    assert refused.value.status == 422
    assert WRONG_FIELD in refused.value.message
    after = api_server.get("v1", "Node", "", OWN)
    assert before is not None
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_its_bound_token_still_writes_every_label_its_pool_publishes(
    api_server: Server, as_node: Server
) -> None:
    wanted = {
        POOL_LABEL: "t4",
        "class.gpuconf.dev/t4-shared": "8",
        "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.count": "2",
    }
    owned = {"gpuconf.dev/owned-labels": ",".join(sorted(wanted))}
    patch = {"metadata": {"labels": wanted, "annotations": owned}}
    # Another test's policy of the same name (fleet's, mig's) may be enforced a moment longer.
    deadline = time.monotonic() + 30
    while _refused(as_node, patch) and time.monotonic() < deadline:
        time.sleep(0.2)
    _patch(as_node, OWN, patch)
    assert _labels(api_server, OWN) == {"pool": "h100", **wanted}
    # and takes back a class label it no longer serves
    _patch(as_node, OWN, {"metadata": {"labels": {"class.gpuconf.dev/t4-shared": None}}})
    assert "class.gpuconf.dev/t4-shared" not in _labels(api_server, OWN)


@contextlib.contextmanager
def _policy_of(api_server: Server, folder: Path, labels: dict[str, str]) -> Iterator[None]:
    """Another rendered cluster's node policy (it replaces lab's, of the same name), with OWN a
    Node carrying `labels`."""
    documents = [yaml.safe_load((folder / f).read_text(encoding="utf-8")) for f in POLICY_FILES]
    with _policy_documents(api_server, documents, labels):
        yield


@contextlib.contextmanager
def _policy_documents(
    api_server: Server, documents: list[dict[str, Any]], labels: dict[str, str]
) -> Iterator[None]:
    applied = [("policy", document) for document in documents]
    node = _node(OWN)
    node["metadata"]["labels"] = labels
    made = [("test", node)]
    try:
        for _, document in applied:
            api_server.apply(document)
        for _, document in made:
            api_server.create(document)
        yield
    finally:
        delete_objects(api_server, applied + made)


def _once_enforced(server: Server, admitted: dict[str, Any], refused: dict[str, Any]) -> Refused:
    """The server's refusal of `refused`, once it admits `admitted` and refuses `refused`, which
    only the policy under test does: until the server enforces it, it enforces lab's of the same
    name or none (which admits both)."""
    deadline = time.monotonic() + 30
    while True:
        own, other = _refused(server, admitted), _refused(server, refused)
        if own is None and other is not None:
            return other
        if time.monotonic() > deadline:
            pytest.fail(f"{admitted} refused: {own}; {refused} refused: {other}")
        time.sleep(0.2)


@pytest.fixture
def fleet_policy(api_server: Server) -> Iterator[None]:
    """clusters/fleet.yaml's policy, with OWN a Node of its t4 pool, which selects its nodes by
    node.example.com/gpu=tesla-t4, not by gpuconf's pool label."""
    with _policy_of(api_server, RENDERED / "fleet", {"node.example.com/gpu": "tesla-t4"}):
        yield


@pytest.mark.usefixtures("fleet_policy")
def test_a_node_selected_by_another_label_may_name_its_own_pool_and_no_other(
    kubeconfig: Path,
) -> None:
    """fleet's a100 pool selects gpuconf.dev/pool=a100: a t4 Node writing that would join it."""
    server = _impersonating(kubeconfig, OWN)
    own = {"metadata": {"labels": {POOL_LABEL: "t4", "class.gpuconf.dev/t4-whole": "1"}}}
    other = _once_enforced(server, own, {"metadata": {"labels": {POOL_LABEL: "a100"}}})
    assert other.status == 422
    assert WRONG_FIELD in other.message
    selector = _refused(server, {"metadata": {"labels": {"node.example.com/gpu": "h100-sxm5"}}})
    assert selector is not None
    assert WRONG_FIELD in selector.message


def test_a_node_of_two_pools_may_not_name_either(api_server: Server, kubeconfig: Path) -> None:
    """In fleet's t4 by its selector and in a100 by gpuconf's pool label: naming t4 would leave
    a100, so neither runtime's pool labels are admitted there; GFD's still are."""
    both = {"node.example.com/gpu": "tesla-t4", POOL_LABEL: "a100"}
    with _policy_of(api_server, RENDERED / "fleet", both):
        server = _impersonating(kubeconfig, OWN)
        gfd = _label("nvidia.com/gpu.count")
        renamed = _once_enforced(server, gfd, {"metadata": {"labels": {POOL_LABEL: "t4"}}})
        assert WRONG_FIELD in renamed.message
        assert _refused(server, _label("class.gpuconf.dev/a100-train")) is not None


A30_KEY, H100_KEY = "nvidia.com/mig-1g.6gb.count", "nvidia.com/mig-1g.10gb.count"


@pytest.fixture
def mig_policy(api_server: Server) -> Iterator[None]:
    """clusters/mig.yaml's policy, with OWN a Node of its a30 pool (by the pool's selector)."""
    with _policy_of(api_server, RENDERED / "mig", {"pool": "h100", POOL_LABEL: "a30"}):
        yield


def _label(key: str) -> dict[str, Any]:
    return {"metadata": {"labels": {key: "1"}}}


@pytest.mark.usefixtures("mig_policy")
def test_a_node_may_write_the_mig_keys_of_its_own_pool_s_gpus_and_no_others(
    kubeconfig: Path,
) -> None:
    server = _impersonating(kubeconfig, OWN)
    other = _once_enforced(server, _label(A30_KEY), _label(H100_KEY))
    assert other.status == 422
    assert WRONG_FIELD in other.message


@pytest.fixture
def many_pools_policy(api_server: Server) -> Iterator[None]:
    """The policy of a cluster of 40 MIG pools and 300 plain ones (tests/many_pools.py): the
    server compiles it (under 100,000 code points and 250 nested calls an expression, within
    its cost budget) or refuses to apply it. OWN is a Node of the last plain pool."""
    tree = rendered(many_pools(40, 300))
    documents = [load_yaml(tree[f]) for f in POLICY_FILES]
    with _policy_documents(api_server, documents, {POOL_LABEL: "l4-299"}):
        yield


@pytest.mark.usefixtures("many_pools_policy")
def test_with_hundreds_of_pools_the_policy_is_accepted_and_still_enforced(
    kubeconfig: Path,
) -> None:
    server = _impersonating(kubeconfig, OWN)
    own = {
        "metadata": {
            "labels": {
                POOL_LABEL: "l4-299",
                "class.gpuconf.dev/l4-299": "1",
                "nvidia.com/gpu.product": "NVIDIA-L4",
            }
        }
    }
    moved = _once_enforced(server, own, {"metadata": {"labels": {POOL_LABEL: "l4-0"}}})
    assert WRONG_FIELD in moved.message
    for refused in ("class.gpuconf.dev/l4-0", "class.gpuconf.dev/h100-0-1g", H100_KEY):
        found = _refused(server, _label(refused))
        assert found is not None, refused
        assert WRONG_FIELD in found.message


@pytest.mark.usefixtures("many_pools_policy")
def test_with_hundreds_of_pools_a_mig_pool_s_node_writes_its_mig_keys(
    api_server: Server, kubeconfig: Path
) -> None:
    server = _impersonating(kubeconfig, OWN)
    _once_enforced(server, _label("class.gpuconf.dev/l4-299"), _label(H100_KEY))
    api_server.request(
        "PATCH", api_server.path("v1", "Node", "", OWN), _label_pool("h100-39"), None, MERGE
    )
    mig = {"metadata": {"labels": {H100_KEY: "7", "class.gpuconf.dev/h100-39-3g": "2"}}}
    assert _refused(server, mig) is None
    assert _refused(server, _label(A30_KEY)) is not None
    assert _refused(server, _label_pool("h100-0")) is not None


def _label_pool(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {POOL_LABEL: name}}}
