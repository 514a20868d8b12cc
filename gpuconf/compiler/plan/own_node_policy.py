"""A ValidatingAdmissionPolicy holding a node agent's service account to its own Node.

RBAC cannot say "only the Node your pod runs on". From Kubernetes 1.30 a service account token
bound to a pod carries the pod's node (`authentication.kubernetes.io/node-name` in the user
info), and a policy can compare it with the Node being updated. Each agent (gpuconf node, the
driver installer) gets one such policy: its Node updates must be to its own Node, and change
only what its `changes` expression allows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata

NODE_KEY = "authentication.kubernetes.io/node-name"


def cel_string(text: str) -> str:
    """A CEL string literal; label keys and values hold no quote or backslash, but be sure."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def key_set(keys: Iterable[str]) -> str:
    """A CEL map literal of `keys`: `k in` it is one lookup, whatever the number of keys."""
    return "{" + ", ".join(f"{cel_string(key)}: true" for key in sorted(keys)) + "}"


def metadata_variables(kind: str) -> list[dict[str, str]]:
    """`old_<kind>` and `new_<kind>`: the Node's labels or annotations before and after the
    update, empty where it has none."""
    return [
        {
            "name": f"{age}_{kind}",
            "expression": f"has({obj}.metadata.{kind}) ? {obj}.metadata.{kind} : {{}}",
        }
        for age, obj in (("old", "oldObject"), ("new", "object"))
    ]


def only_these_change(kind: str, may_change: str) -> str:
    """CEL: of the Node's `kind` (labels or annotations, in metadata_variables), every key for
    which `may_change` (a CEL predicate on k) is false has the same value before and after,
    and none went."""
    old, new = f"variables.old_{kind}", f"variables.new_{kind}"
    return (
        f"{new}.filter(k, !({may_change})).all(k, k in {old} && {new}[k] == {old}[k]) && "
        f"{old}.filter(k, !({may_change})).all(k, k in {new})"
    )


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
                # A request with no extra (an impersonated user, a client certificate) is
                # refused with this message rather than an evaluation error.
                "expression": (
                    f"has(request.userInfo.extra) && '{NODE_KEY}' in request.userInfo.extra && "
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
