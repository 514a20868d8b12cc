"""What Kueue's own Configuration must hold for DRA quota: a deviceClassMapping per DRA class,
naming the resource its ClusterQueues count, and the feature gate where it is off by default.

Kueue reads its Configuration from its manager's ConfigMap (Helm value
managerConfig.controllerManagerConfigYaml), which gpuconf does not own: the file is rendered
beside the manifests, not listed in kustomization.yaml, for the team running Kueue to merge."""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.kueue.releases import facts
from gpuconf.compiler.plan.artifact import Artifact
from gpuconf.compiler.resolve.class_selection import ResolvedClass

# At the top of the tree: every file in a sub-folder is a manifest (Flux applies whole folders).
CONFIGURATION = "kueue-configuration.yaml"


def kueue_configuration(cluster: Cluster, classes: tuple[ResolvedClass, ...]) -> Artifact:
    kueue = cluster.spec.kueue
    assert kueue is not None
    release = facts(kueue.version)
    gates = None
    if release.dra_gate is not None and not release.dra_gate_on_by_default:
        gates = {release.dra_gate: True}
    return Artifact(
        CONFIGURATION,
        "kueue-configuration.yaml.j2",
        {
            "api_version": release.config_api_version,
            "device_class_mappings": [
                {"name": c.resource_name, "deviceClassNames": [c.name]} for c in classes
            ],
            "feature_gates": gates,
        },
        source=("spec", "kueue"),
    )
