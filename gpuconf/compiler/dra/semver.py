"""Semantic versions as DRA `version` attributes hold them (cudaComputeCapability, driverVersion).

NVIDIA's DRA driver publishes them through semver.MustParse: "8.0" is published as 8.0.0,
"550.54.15" as 550.54.15. Kubernetes' CEL semver library compares them by value."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuconf.api.base import version_parts

_SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


@dataclass(frozen=True, order=True)
class SemVer:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> SemVer:
        """Strict semver (Kubernetes' semver() accepts no shorthand); raises ValueError."""
        found = _SEMVER.match(text)
        if found is None:
            raise ValueError(f"{text!r} is not a semantic version MAJOR.MINOR.PATCH")
        return cls(*(int(part) for part in found.groups()))

    @classmethod
    def published(cls, text: str) -> SemVer:
        """As the driver publishes a dotted version: missing parts are 0, leading zeros dropped."""
        return cls(*version_parts(text))

    def compare(self, other: SemVer) -> int:
        return (self > other) - (self < other)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"
