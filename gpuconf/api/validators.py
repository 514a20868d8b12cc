"""Validate a cluster file, the GPU catalog or a node config with pydantic-core, against the frozen schema.

Each validator is built on first use from its module in `api/frozen/`; pydantic itself is
not imported. A shape error raises pydantic-core's `ValidationError`."""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from gpuconf.api.core_validator import SchemaValidator

if TYPE_CHECKING:
    from gpuconf.api.cluster import Cluster
    from gpuconf.api.gpu_model import GpuCatalog
    from gpuconf.api.node_config import NodeConfig


@cache
def _validator(kind: str) -> SchemaValidator:
    frozen = importlib.import_module(f"gpuconf.api.frozen.{kind}")
    return SchemaValidator(frozen.SCHEMA)


def validate_cluster(data: Any) -> Cluster:
    return cast("Cluster", _validator("cluster").validate_python(data))


def validate_catalog(data: Any) -> GpuCatalog:
    return cast("GpuCatalog", _validator("gpu_catalog").validate_python(data))


def validate_node_config(data: Any) -> NodeConfig:
    return cast("NodeConfig", _validator("node_config").validate_python(data))
