"""kustomization.yaml listing every manifest.

No `namespace:` field: kustomize would stamp it on cluster-scoped kinds it does not know
(DeviceClass, RuntimeClass). Objects carry their own namespaces."""

from __future__ import annotations

from gpuconf.compiler.plan.artifact import Artifact


def kustomization(artifacts: list[Artifact]) -> Artifact:
    resources = sorted(a.path for a in artifacts if a.in_kustomization)
    return Artifact(
        "kustomization.yaml", "kustomization.yaml.j2", {"resources": resources}, "Kustomization"
    )
