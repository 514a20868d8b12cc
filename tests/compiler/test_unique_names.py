"""The names rule finds repeats without a step per name where there are none (rules/names.py):
where there are, each repeat is reported at its own place, UUID-less GPUs counted out."""

from __future__ import annotations

from builders import cluster, errors, gpu_uuid, pool

from gpuconf.diagnostics import format_path


def test_a_repeated_uuid_is_reported_where_it_is_among_gpus_without_uuids() -> None:
    declared = pool("a100", "A100-SXM4-80GB", 4, size=None)
    del declared["size"]
    declared["nodes"] = [
        {"name": "n-0", "gpus": [{"index": 0}, {"index": 1, "uuid": gpu_uuid(1)}]},
        {"name": "n-1", "gpus": [{"index": 0}, {"index": 1}, {"index": 2, "uuid": gpu_uuid(1)}]},
        {"name": "n-2", "gpus": [{"index": 0, "uuid": gpu_uuid(2)}, {"index": 0}]},
    ]
    document = cluster([declared], [{"name": "all", "select": {"pools": ["a100"]}}])
    found = [(format_path(d.path), d.message) for d in errors(document)]
    assert found == [
        (
            "spec.nodePools[0].nodes[1].gpus[2].uuid",
            f"GPU UUID {gpu_uuid(1)!r} is already used",
        ),
        (
            "spec.nodePools[0].nodes[2].gpus[1].index",
            "GPU index on node 'n-2': '0' is already used",
        ),
    ]
