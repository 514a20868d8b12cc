"""A pool's outputs name its place in the cluster file (plan/pod.py pool_source), found by
identity first and by value for a copy of the pool."""

from __future__ import annotations

from builders import cluster, pool, valid

from gpuconf.compiler.plan.pod import pool_source


def test_each_pool_and_a_copy_of_it_are_found_where_the_file_has_them() -> None:
    pools = [pool(f"p{i}", "L4", 1) for i in range(4)]
    document = cluster(pools, [{"name": "all", "select": {"model": "L4"}}])
    validated = valid(document).cluster
    found = [pool_source(validated, p) for p in validated.spec.node_pools]
    assert found == [("spec", "nodePools", i) for i in range(4)]
    copy = validated.spec.node_pools[2].replace()
    assert copy is not validated.spec.node_pools[2]
    assert pool_source(validated, copy) == ("spec", "nodePools", 2)
