"""gpuconf's name limits are not looser than Kubernetes' where it matters: a cluster holding a
value at the very edge gpuconf accepts (tests/name_limits.py) renders objects kube-apiserver
admits, by the same dry-run apply as test_rendered_trees_admitted.py. (That the value one past
each edge is refused rests on the Kubernetes sources tests/name_limits.py cites.)"""

from __future__ import annotations

import pytest
import yaml
from builders import rendered
from control_plane.manifests import (
    admission_refusals,
    ensure_namespaces,
    install_crds,
    tree_objects,
)
from control_plane.server import Server
from name_limits import LIMITS, Limit, limit

from gpuconf.api.node_facts import MIG_CONFIG_PREFIX


@pytest.fixture
def with_crds(api_server: Server) -> Server:
    install_crds(api_server)
    return api_server


@pytest.mark.parametrize("limit", LIMITS, ids=[limit.id for limit in LIMITS])
def test_the_longest_value_gpuconf_accepts_renders_objects_kubernetes_admits(
    with_crds: Server, limit: Limit
) -> None:
    tree = rendered(limit.document(limit.within))
    ensure_namespaces(with_crds, tree_objects(tree))
    refusals = admission_refusals(with_crds, tree, dry_run=True)
    assert not refusals, "\n".join(refusals)


def test_the_mig_config_label_of_the_longest_pool_name_is_admitted_on_a_node(
    with_crds: Server,
) -> None:
    """gpuconf-<pool> is not in a rendered object but on the nodes: the MIG manager's ConfigMap
    names it, and the nodes' nvidia.com/mig.config label picks it (k8s-mig-manager)."""
    pool = limit("pool name")
    tree = rendered(pool.document(pool.within))
    [config_map] = [data for path, data in tree.items() if path.startswith("mig-manager/configmap")]
    config = yaml.safe_load(yaml.safe_load(config_map)["data"]["config.yaml"])
    longest = MIG_CONFIG_PREFIX + pool.within
    assert longest in config["mig-configs"]
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "mig-node", "labels": {"nvidia.com/mig.config": longest}},
    }
    assert with_crds.apply(node, dry_run=True).body["metadata"]["labels"] == {
        "nvidia.com/mig.config": longest
    }
