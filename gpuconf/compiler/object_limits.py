"""Objects Kubernetes would refuse for their size, found before anything is written.

The API server refuses a ConfigMap whose data holds more than 1 MiB (core validation's
MaxSecretSize) and etcd refuses requests over 1.5 MiB. Each manifest as rendered (its data
plus the object around it) is held to 1 MiB, which keeps both with room to spare.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.render import RenderedTree
from gpuconf.compiler.validate import Validated
from gpuconf.diagnostics import Diagnostic, KeyPath

MAX_OBJECT_BYTES = 1024 * 1024


def _where(validated: Validated, path: str) -> tuple[KeyPath, str]:
    """The pool an output file belongs to (pools/<name>/…), as a key path and a hint."""
    parts = path.split("/")
    pools = validated.cluster.spec.node_pools
    found = next(
        (i for i, p in enumerate(pools) if parts[:1] == ["pools"] and p.name == parts[1]), None
    )
    if found is None:
        return ("metadata", "name"), "split the cluster into smaller clusters"
    pool = pools[found]
    declared = len(pool.nodes)
    if declared:
        what = (
            f"split pool {pool.name!r} into several pools of fewer declared nodes (it declares "
            f"{declared}), or give it `size` instead of declaring each node"
        )
    else:
        what = f"split pool {pool.name!r} into several smaller pools"
    return ("spec", "nodePools", found), what


def oversized(
    validated: Validated, artifacts: Iterable[Artifact], tree: RenderedTree
) -> list[Diagnostic]:
    diagnostics = []
    for artifact in artifacts:
        if not artifact.in_kustomization:
            continue
        size = len(tree[artifact.path])
        if size <= MAX_OBJECT_BYTES:
            continue
        path, hint = _where(validated, artifact.path)
        kind = artifact.kind or "object"
        diagnostics.append(
            validated.located.diagnostic(
                path,
                f"the {kind} {artifact.path} would hold {size / 2**20:.2f} MiB; Kubernetes "
                f"refuses a {kind} over {MAX_OBJECT_BYTES // 2**20} MiB",
                hint,
            )
        )
    return diagnostics
