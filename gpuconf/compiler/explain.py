"""The capacity table of a cluster: per class, devices, replicas, capacity, quota and headroom."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from gpuconf.compiler.resolve.class_selection import ResolvedClass
from gpuconf.compiler.validate import Validated
from gpuconf.formats.located_yaml import LoadFailed, load_file


class ClassRow(NamedTuple):
    name: str
    request: str
    devices: int
    replicas: int
    capacity: int
    quota: int
    headroom: int
    namespaces: dict[str, int]


def _claim_shape(resolved: ResolvedClass) -> str:
    """What one claim of the class takes, where it is more than one device."""
    claim = resolved.spec.claim
    if claim is None:
        return ""
    shape = [
        "every device on the node"
        if claim.allocation_mode == "All"
        else f"{claim.count} per claim"
        if claim.count > 1
        else ""
    ]
    if claim.first_available:
        shape.append("else " + ", else ".join(claim.first_available))
    if claim.match_attribute:
        shape.append(f"same {claim.match_attribute}")
    if claim.extended_resource:
        shape.append(f"or {resolved.resource_name}")
    shown = "; ".join(s for s in shape if s)
    return f" ({shown})" if shown else ""


def class_rows(validated: Validated) -> list[ClassRow]:
    spec = validated.cluster.spec
    by_class: dict[str, dict[str, int]] = {}
    for declared in spec.quotas:
        for name, count in declared.classes.items():
            by_class.setdefault(name, {})[declared.namespace] = count
    rows = []
    for resolved in validated.classes:
        namespaces = by_class.get(resolved.name, {})
        quota = sum(namespaces.values())
        request = (
            resolved.resource_name
            if spec.allocation == "device-plugin"
            else f"DeviceClass {resolved.name}{_claim_shape(resolved)}"
        )
        rows.append(
            ClassRow(
                resolved.name, request, resolved.devices, resolved.replicas, resolved.capacity,
                quota, resolved.capacity - quota, dict(sorted(namespaces.items())),
            )
        )  # fmt: skip
    return rows


def explain_text(validated: Validated) -> str:
    rows = class_rows(validated)
    header = ("class", "requested as", "devices", "replicas", "capacity", "quota", "headroom")
    table = [header] + [
        (
            r.name,
            r.request,
            str(r.devices),
            str(r.replicas),
            str(r.capacity),
            str(r.quota),
            str(r.headroom),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in table
    ]
    for row in rows:
        if row.namespaces:
            lines.append("")
            lines.append(f"{row.name}: quota per namespace")
            lines.extend(f"  {ns}: {count}" for ns, count in row.namespaces.items())
    if validated.cluster.spec.kueue is not None:
        # Imported here: only a cluster with Kueue has queues to list (the README's capacity
        # table of any other cluster plans none).
        from gpuconf.compiler.explain_kueue import kueue_lines

        lines += kueue_lines(validated)
    return "\n".join(lines) + "\n"


def declared_name(file: Path) -> str | None:
    """The cluster name a file declares, read without validating it; None when unreadable."""
    try:
        data = load_file(file).data
    except LoadFailed:
        return None
    metadata = data.get("metadata") if isinstance(data, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else None


def files_declaring(name: str, files: Sequence[Path]) -> tuple[list[Path], list[str]]:
    """The files declaring cluster `name`, and every name declared (for "known: …")."""
    names = {file: declared_name(file) for file in files}
    known = sorted({n for n in names.values() if n is not None})
    return [file for file, declared in names.items() if declared == name], known
