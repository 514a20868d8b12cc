"""`gpuconf node driver-drain|driver-uncordon` keep the Kubernetes client, set up by the same
in-cluster reading as the node runtime's own client (gpuconf/node/in_cluster.py): the pod's
token, re-read as it rotates, and its CA; here against an HTTPS stand-in of the API server."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client import ApiClient, CoreV1Api
from node_api import TOKEN, NodeApi

from gpuconf.errors import UserError
from gpuconf.node import in_cluster
from gpuconf.node.driver_upgrade import client_configuration, in_cluster_client


@pytest.mark.usefixtures("pod")
def test_the_driver_commands_client_reads_the_node_as_the_pod(node_api: NodeApi) -> None:
    with in_cluster_client() as client:
        node = CoreV1Api(client).read_node("node-a")
    assert node.metadata.resource_version == "42"
    [seen] = node_api.seen
    assert seen.path == "/api/v1/nodes/node-a"
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.usefixtures("pod")
def test_its_token_is_re_read_once_a_minute_has_passed(node_api: NodeApi, pod: Path) -> None:
    now = [0.0]
    config = in_cluster.load()
    config = config._replace(token=in_cluster.TokenFile(config.token.path, lambda: now[0]))
    with ApiClient(client_configuration(config)) as client:
        api = CoreV1Api(client)
        api.read_node("node-a")
        (pod / "token").write_text("token-after-rotation", encoding="utf-8")
        api.read_node("node-a")
        now[0] += in_cluster.TOKEN_PERIOD_SECONDS
        api.read_node("node-a")
    sent = [seen.headers["Authorization"] for seen in node_api.seen]
    assert sent == [f"Bearer {TOKEN}", f"Bearer {TOKEN}", "Bearer token-after-rotation"]


@pytest.mark.usefixtures("pod")
def test_a_refusal_ends_the_command_with_the_server_s_message(node_api: NodeApi) -> None:
    node_api.statuses = [403]
    with pytest.raises(UserError) as refused, in_cluster_client() as client:
        CoreV1Api(client).read_node("node-a")
    assert str(refused.value) == "the API server answered 403: the stand-in refuses with 403"


def test_outside_a_pod_the_command_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    expected = "cannot reach the API server: not in a cluster: "
    with pytest.raises(UserError, match=expected), in_cluster_client():
        pass
