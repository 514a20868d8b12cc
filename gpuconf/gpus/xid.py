"""What an XID means for the GPU that reported it, after NVIDIA's XID catalog (Ampere and later).

Three classes, by the catalog's "immediate action":

- application: the fault is the application's (RESTART_APP, IGNORE); the GPU is fine.
- workload: the GPU misbehaved but recovers once the workload is gone; it is withheld for a
  quiet period (any XID the catalog does not list falls here).
- reset: the GPU is unusable until it is reset or the node rebooted (RESET_GPU, RESTART_BM,
  the ECC/NVLink workflows that end in a reset); it is withheld until NVML shows the reset.

109 (context-switch timeout) is a reset: NVIDIA's device plugin ignores it since v0.17.1, but
the catalog's action is RESET_GPU, and offering a GPU that needs a reset fails every pod sent
to it. A cluster that prefers NVIDIA's choice lists it under `ignoredXids`.
"""

from __future__ import annotations

from collections.abc import Container
from enum import StrEnum


class XidClass(StrEnum):
    APPLICATION = "application"
    WORKLOAD = "workload"
    RESET = "reset"


APPLICATION_XIDS = (13, 31, 43, 45, 63, 68, 69, 92, 121)
"""Graphics/MMU/NVDEC faults of one application, and events the catalog says to ignore."""
RESET_XIDS = (48, 62, 64, 74, 79, 95, 109, 119, 120, 140)
"""Double-bit/uncontained ECC, micro-controller halt, remapping failure, NVLink, off the bus, GSP."""


def classify(xid: int, ignored: Container[int], needs_reset: Container[int]) -> XidClass:
    if xid in ignored:
        return XidClass.APPLICATION
    if xid in needs_reset:
        return XidClass.RESET
    return XidClass.WORKLOAD
