"""The node changes only the labels it owns: those it set, recorded in an annotation."""

from __future__ import annotations

from gpuconf.gpus.gfd_labels import OWNED_ANNOTATION
from gpuconf.node.node_labels import nfd_keys, owned_keys, reconcile

PRODUCT = "nvidia.com/gpu.product"
POOL = "gpuconf.dev/pool"


def test_absent_keys_are_set_and_become_owned() -> None:
    change = reconcile({"a": "b"}, frozenset(), {PRODUCT: "Tesla-T4", POOL: "t4"})
    assert change.labels == {PRODUCT: "Tesla-T4", POOL: "t4"}
    assert change.owned == (POOL, PRODUCT)
    assert change.foreign == ()


def test_a_key_someone_else_set_is_never_changed_nor_owned() -> None:
    change = reconcile({PRODUCT: "Tesla-T4-SHARED"}, frozenset(), {PRODUCT: "Tesla-T4"})
    assert change.labels == {}
    assert change.owned == ()
    assert change.foreign == (PRODUCT,)


def test_owned_keys_no_longer_wanted_are_removed_and_others_kept() -> None:
    current = {PRODUCT: "Tesla-T4", "nvidia.com/gpu.replicas": "4", "team": "ml"}
    owned = frozenset({PRODUCT, "nvidia.com/gpu.replicas"})
    change = reconcile(current, owned, {PRODUCT: "Tesla-T4"})
    assert change.labels == {"nvidia.com/gpu.replicas": None}
    assert change.owned == (PRODUCT,)


def test_an_owned_key_someone_removed_is_set_again_and_unchanged_ones_are_not_patched() -> None:
    change = reconcile({POOL: "t4"}, frozenset({POOL, PRODUCT}), {POOL: "t4", PRODUCT: "L4"})
    assert change.labels == {PRODUCT: "L4"}


def test_the_owned_annotation_is_read_as_a_key_set() -> None:
    assert owned_keys({OWNED_ANNOTATION: f"{POOL},{PRODUCT}"}) == {POOL, PRODUCT}
    assert owned_keys({OWNED_ANNOTATION: ""}) == frozenset()
    assert owned_keys({}) == frozenset()


def test_keys_nfd_manages_are_left_to_nfd_even_where_gpuconf_set_them_first() -> None:
    annotations = {
        "nfd.node.kubernetes.io/feature-labels": f"cpu-model.vendor_id,{PRODUCT}",
        "gpu.nfd.node.kubernetes.io/feature-labels": "nvidia.com/gpu.count",
    }
    nfd = nfd_keys(annotations)
    assert nfd == {
        "feature.node.kubernetes.io/cpu-model.vendor_id",
        PRODUCT,
        "nvidia.com/gpu.count",
    }
    current = {PRODUCT: "Tesla-T4", "nvidia.com/gpu.count": "4", POOL: "t4"}
    owned = frozenset({PRODUCT, "nvidia.com/gpu.count", POOL})
    wanted = {PRODUCT: "Tesla-T4-SHARED", "nvidia.com/gpu.count": "4", POOL: "t4"}
    change = reconcile(current, owned, wanted, nfd)
    assert change.labels == {}
    assert change.owned == (POOL,)
    assert change.foreign == ("nvidia.com/gpu.count", PRODUCT)


def test_a_value_kubernetes_would_refuse_is_left_out_and_the_rest_is_still_written() -> None:
    # A declared model's NVML name may be 96 characters; its gpu.product would be refused by the
    # API server, and the whole patch with it. NFD's worker ignores such a label the same way.
    long_product = "NVIDIA-" + "X" * 57  # 64 characters
    change = reconcile({}, frozenset(), {PRODUCT: long_product, POOL: "t4"})
    assert change.labels == {POOL: "t4"}
    assert change.owned == (POOL,)
    assert change.invalid == (PRODUCT,)
    # One gpuconf wrote before, now refused: taken away rather than left stale.
    change = reconcile({PRODUCT: "L4"}, frozenset({PRODUCT}), {PRODUCT: "L4 bad value"})
    assert change.labels == {PRODUCT: None}
    assert change.invalid == (PRODUCT,)
