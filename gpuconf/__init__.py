"""gpuconf: typed GPU Kubernetes cluster descriptions compiled into GitOps manifests."""

from __future__ import annotations

__version__ = "0.1.0"
