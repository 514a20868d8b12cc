"""Compare the GPUs a node config declares with the GPUs NVML finds on the node."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpuconf.api.node_config import ExpectedGpu
from gpuconf.gpus.mig import describe
from gpuconf.node.nvml.api import GpuInfo


@dataclass(frozen=True)
class DriftReport:
    problems: list[str]
    """One readable line per difference, ordered by GPU index."""
    matching_indices: frozenset[int]
    """GPUs that are declared and found exactly as declared."""

    @property
    def drifted(self) -> bool:
        return bool(self.problems)

    def as_text(self) -> str:
        if not self.drifted:
            return f"inventory matches: {_gpus(len(self.matching_indices))} as declared\n"
        lines = [f"inventory drift: {len(self.problems)} problem(s)"]
        lines += [f"  - {problem}" for problem in self.problems]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, object]:
        return {
            "drifted": self.drifted,
            "matchingIndices": sorted(self.matching_indices),
            "problems": list(self.problems),
        }


def compare(expected: Sequence[ExpectedGpu], discovered: Sequence[GpuInfo]) -> DriftReport:
    declared = {gpu.index: gpu for gpu in expected}
    found = {gpu.index: gpu for gpu in discovered}
    problems: list[str] = []
    matching: set[int] = set()
    for index in sorted(declared.keys() | found.keys()):
        if index not in found:
            problems.append(f"GPU {index}: declared but not found")
        elif index not in declared:
            problems.append(f"GPU {index}: found but not declared ({found[index].name})")
        else:
            differences = _differences(declared[index], found[index])
            problems += [f"GPU {index}: {difference}" for difference in differences]
            if not differences:
                matching.add(index)
    return DriftReport(problems=problems, matching_indices=frozenset(matching))


def _differences(declared: ExpectedGpu, found: GpuInfo) -> list[str]:
    out = []
    if declared.nvml_name != found.name:
        out.append(f"expected model {declared.nvml_name}, found {found.name}")
    if declared.uuid is not None and declared.uuid != found.uuid:
        out.append(f"expected uuid {declared.uuid}, found {found.uuid}")
    mig = _mig_difference(declared.mig, found)
    if mig:
        out.append(mig)
    return out


def _mig_difference(declared: Mapping[str, int] | None, found: GpuInfo) -> str:
    if declared is None:
        return "MIG is enabled but declared disabled" if found.mig_enabled else ""
    wanted = {profile: count for profile, count in declared.items() if count > 0}
    if not found.mig_enabled:
        return f"MIG is declared ({describe(wanted)}) but disabled"
    actual = Counter(device.profile for device in found.mig_devices)
    if wanted == dict(actual):
        return ""
    return f"MIG layout differs: declared {describe(wanted)}, found {describe(actual)}"


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"
