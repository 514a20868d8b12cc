"""A ValidatingAdmissionPolicy holding a node agent's service account to its own Node.

RBAC cannot say "only the Node your pod runs on". From Kubernetes 1.30 a service account token
bound to a pod carries the pod's node (`authentication.kubernetes.io/node-name` in the user
info), and a policy can compare it with the Node being updated. Each agent (gpuconf node, the
driver installer) gets one such policy: its Node updates must be to its own Node, and change
only what its `changes` expression allows."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

NODE_KEY = "authentication.kubernetes.io/node-name"


def own_node_policy(
    cluster: Cluster,
    account: str,
    component: str,
    *,
    changes: str,
    message: str,
    variables: list[dict[str, Any]],
) -> list[Artifact]:
    """The policy and its binding for `account` in gpuconf's namespace. `changes` is a CEL
    expression that holds where the update changes only what the agent may change (`variables`
    are its named sub-expressions); `message` says what that is."""
    namespace = cluster.spec.namespace
    name = f"{account}-own-node-{namespace}"
    user = f"system:serviceaccount:{namespace}:{account}"
    policy = {
        "meta": metadata(cluster, name, component, wave=WAVE_CONFIG),
        "resource_rules": [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["UPDATE"],
                "resources": ["nodes"],
            }
        ],
        "match_conditions": [
            {"name": account, "expression": f"request.userInfo.username == '{user}'"}
        ],
        "validations": [
            {
                "expression": (
                    f"'{NODE_KEY}' in request.userInfo.extra && "
                    f"request.userInfo.extra['{NODE_KEY}'] == [object.metadata.name]"
                ),
                "message": f"{account} may change only the Node its pod runs on",
            },
            {"expression": changes, "message": message},
        ],
        "variables": variables,
    }
    return [
        manifest(
            f"cluster/validatingadmissionpolicy-{account}.yaml",
            "validatingadmissionpolicy.yaml.j2",
            "ValidatingAdmissionPolicy",
            policy,
        ),
        manifest(
            f"cluster/validatingadmissionpolicybinding-{account}.yaml",
            "validatingadmissionpolicybinding.yaml.j2",
            "ValidatingAdmissionPolicyBinding",
            {"meta": metadata(cluster, name, component, wave=WAVE_CONFIG), "policy": name},
        ),
    ]
