"""Quota: how many devices of each class one namespace may request."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gpuconf.api.base import DnsLabel, Model


class Quota(Model):
    namespace: DnsLabel
    """The namespace the quota applies to (created if absent)."""
    classes: dict[DnsLabel, Annotated[int, Field(ge=0, le=1_000_000)]] = Field(min_length=1)
    """Class name -> how many of the class's devices the namespace may request."""
