"""Validate a cluster file or the GPU catalog with pydantic-core, against the frozen schema.

Each validator is built on first use from `api/frozen_schema.py`; pydantic itself is not
imported. A shape error raises pydantic-core's `ValidationError`."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, cast

from pydantic_core import SchemaValidator

if TYPE_CHECKING:
    from gpuconf.api.cluster import Cluster
    from gpuconf.api.gpu_model import GpuCatalog


@cache
def _validator(root: str) -> SchemaValidator:
    from gpuconf.api import frozen_schema

    return SchemaValidator(getattr(frozen_schema, root))


def validate_cluster(data: Any) -> Cluster:
    return cast("Cluster", _validator("CLUSTER").validate_python(data))


def validate_catalog(data: Any) -> GpuCatalog:
    return cast("GpuCatalog", _validator("GPU_CATALOG").validate_python(data))
