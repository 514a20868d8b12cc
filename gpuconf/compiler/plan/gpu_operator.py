"""The GPU Operator hand-off: its Helm values and the equal ClusterPolicy merge patch.

They turn off the operands gpuconf replaces on every pool (driver, container toolkit, device
plugin, and GPU Feature Discovery where gpuconf's node runtime writes GFD's labels) and give
the MIG manager gpuconf's mig-parted ConfigMap. Each section has the same shape in the chart's values and in the ClusterPolicy's spec: NVIDIA's chart copies
`enabled` and `config.{name,default}` across in `templates/clusterpolicy.yaml`. The chart has no
values schema; render checks both files against the release's ClusterPolicy CRD schema
(templating/crds/gpu-operator/). dcgm-exporter and Node Feature Discovery stay the Operator's:
the Operator finds GPU nodes by NFD's `pci-10de` labels. An operand that some pool still needs
from the Operator (its GFD on pools gpuconf's node runtime does not label) is said enabled: the
ClusterPolicy turns an operand on or off for the whole cluster, and the per-node deploy labels
(gpus/gpu_operator.py) keep it off the pools gpuconf serves instead. That GFD labels every node
under the ClusterPolicy's one `mig.strategy`, which gpuconf sets to the strategy its MIG pools run
(resolve/mig_strategies.py)."""

from __future__ import annotations

from typing import Any

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, PatchOf
from gpuconf.gpus.gpu_operator import replaced_operands
from gpuconf.gpus.label_owner import gpuconf_writes_gfd_labels
from gpuconf.gpus.mig import DISABLED

VALUES = "gpu-operator-values.yaml"
CLUSTER_POLICY_PATCH = "gpu-operator-clusterpolicy-patch.yaml"
# Beside kustomization.yaml, not in a folder: every file in a folder is a manifest (Flux applies
# a stage folder whole), and these two are inputs to helm and kubectl patch.
SOURCE = ("spec", "gpuOperator")


def operator_sections(cluster: Cluster, uses_mig: bool, mig_strategy: str | None) -> dict[str, Any]:
    """The chart values' (= ClusterPolicy spec's) sections gpuconf decides. `mig_strategy`: the
    one the Operator's GFD must label gpuconf's MIG pools under (resolve/mig_strategies.py),
    None where no pool it labels has MIG, leaving the Operator's own."""
    operator = cluster.spec.gpu_operator
    assert operator is not None
    # Whether gpuconf writes GFD's labels is the cluster's to say, the same on every pool.
    replaced = set(replaced_operands(gfd_labels=gpuconf_writes_gfd_labels(cluster.spec)))
    sections: dict[str, Any] = {
        section: {"enabled": False}
        for section in sorted(replaced)
        if section != "devicePlugin" or not operator.device_plugin
    }
    if "gfd" not in replaced:
        # Said outright: a merge patch that left it out would keep a `false` patched in before.
        sections["gfd"] = {"enabled": True}
    sections["migManager"] = {"enabled": uses_mig}
    if uses_mig:
        sections["migManager"]["config"] = {
            "name": cluster.spec.mig_manager.config_map_name,
            "default": DISABLED,
        }
    if mig_strategy is not None:
        # The chart copies values.mig.strategy into the ClusterPolicy (templates/clusterpolicy.yaml).
        sections["mig"] = {"strategy": mig_strategy}
    return sections


def gpu_operator(cluster: Cluster, uses_mig: bool, mig_strategy: str | None) -> list[Artifact]:
    operator = cluster.spec.gpu_operator
    if operator is None:
        return []
    values = {"sections": operator_sections(cluster, uses_mig, mig_strategy)}
    schema = f"gpu-operator/clusterpolicy-{operator.version}"
    return [
        Artifact(
            VALUES,
            "gpu-operator-values.yaml.j2",
            values,
            source=SOURCE,
            patch_of=PatchOf(schema, ("spec",)),
        ),
        Artifact(
            CLUSTER_POLICY_PATCH,
            "gpu-operator-clusterpolicy-patch.yaml.j2",
            values,
            source=SOURCE,
            patch_of=PatchOf(schema),
        ),
    ]
