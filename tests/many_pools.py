"""A cluster of many pools, as large sites have: the node policy must stay within what
kube-apiserver compiles (100,000 code points and 250 nested calls an expression)."""

from __future__ import annotations

from typing import Any

from builders import cluster, pool


def many_pools(mig_pools: int, plain_pools: int) -> dict[str, Any]:
    """`mig_pools` H100 pools split 1g.10gb and 3g.40gb, with a class for each, and
    `plain_pools` L4 pools of one class each; gpuconf's node runtime writes GFD's labels."""
    pools, classes = [], []
    for i in range(mig_pools):
        name = f"h100-{i}"
        sharing = [
            {"strategy": "mig", "layout": "all-1g.10gb", "indices": [0, 1, 2, 3]},
            {"strategy": "mig", "layout": {"3g.40gb": 2}, "indices": [4, 5, 6, 7]},
        ]
        pools.append(pool(name, "H100-SXM5-80GB", 8, sharing))
        for profile in ("1g.10gb", "3g.40gb"):
            select = {"pools": [name], "migProfile": profile}
            classes.append({"name": f"{name}-{profile.split('.')[0]}", "select": select})
    for i in range(plain_pools):
        name = f"l4-{i}"
        pools.append(pool(name, "L4", 1))
        classes.append({"name": name, "select": {"pools": [name]}})
    data = cluster(pools, classes, node={"labels": {"owner": "gpuconf"}})
    data["metadata"]["name"] = "many"
    return data
