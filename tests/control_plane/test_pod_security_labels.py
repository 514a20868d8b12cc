"""gpuconf reads the Pod Security labels as kube-apiserver 1.34 does: a Namespace the server's
Pod Security admission refuses to create (its labels do not parse: ValidateNamespace in
k8s.io/pod-security-admission admission/admission.go) is one whose label gpuconf's guard refuses
on a namespace it writes no Pod Security on (plan/pod_security.py), and the other way round."""

from __future__ import annotations

import pytest
from control_plane.server import Refused, Server

from gpuconf.compiler.plan.pod_security import (
    AUDIT,
    ENFORCE,
    POD_SECURITY_PRIVILEGED,
    POD_SECURITY_READERS,
    WARN,
)
from gpuconf.compiler.resolve.metadata_guard import refusals

# Valid label values all (Kubernetes' own label validation refuses nothing here).
LEVELS = ["privileged", "baseline", "restricted", "Privileged", "v1.34", "latest", ""]
VERSIONS = [
    "latest",
    "v1.0",
    "v1.34",
    "v1.9223372036854775807",
    "v1.9223372036854775808",
    "v1.034",
    "v2.1",
    "1.34",
    "Latest",
    "restricted",
    "",
]
TABLE = [
    *((key, value) for key in (ENFORCE, AUDIT, WARN) for value in LEVELS),
    *((f"{key}-version", value) for key in (ENFORCE, AUDIT, WARN) for value in VERSIONS),
]


def _server_refusal(server: Server, labels: dict[str, str]) -> Refused | None:
    """How kube-apiserver refuses a dry-run create of a Namespace labelled `labels`, if it does."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "gpuconf-test-pod-security", "labels": labels},
    }
    return server.refusal(namespace)


def _server_admits(server: Server, labels: dict[str, str], key: str) -> bool:
    refused = _server_refusal(server, labels)
    if refused is None:
        return True
    # Pod Security admission's invalidResponse (admission.go), naming the label.
    assert refused.status == 422, refused.message
    assert f"metadata.labels[{key}]: Invalid value" in refused.message
    return False


@pytest.mark.parametrize(("key", "value"), TABLE, ids=[f"{k}={v!r}" for k, v in TABLE])
def test_gpuconf_refuses_a_pod_security_label_where_the_server_refuses_the_namespace(
    api_server: Server, key: str, value: str
) -> None:
    guarded = any(refusals({}, {key: value}, POD_SECURITY_READERS))
    assert _server_admits(api_server, {key: value}, key) is not guarded


@pytest.mark.parametrize(("key", "value"), TABLE, ids=[f"{k}={v!r}" for k, v in TABLE])
def test_on_gpuconf_s_namespace_every_label_the_server_refuses_is_refused(
    api_server: Server, key: str, value: str
) -> None:
    """There gpuconf refuses more: an enforce level other than privileged, which the server
    admits but which keeps gpuconf's privileged installers out."""
    guarded = any(refusals(POD_SECURITY_PRIVILEGED, {key: value}, POD_SECURITY_READERS))
    admitted = _server_admits(api_server, {**POD_SECURITY_PRIVILEGED, key: value}, key)
    lowers_enforce = key == ENFORCE and value != "privileged"
    assert guarded is (not admitted or lowers_enforce)
