"""GPU clients that step aside while the GPU Operator's MIG manager repartitions a node.

Before it applies a layout the MIG manager sets `nvidia.com/gpu.deploy.device-plugin` to
`paused-for-mig-change` (or leaves `false`), and back to `true` afterwards. The operator's own
DaemonSets select `=true`; ours run on nodes without the label as well (clusters without the
operator), so they require only that the label is not one of the stop values."""

from __future__ import annotations

from typing import Any

DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
PAUSED = "paused-for-mig-change"
STOP_VALUES = ["false", PAUSED]


def pause_affinity() -> dict[str, Any]:
    # NotIn also matches nodes that have no such label.
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": DEVICE_PLUGIN_DEPLOY_LABEL,
                                "operator": "NotIn",
                                "values": STOP_VALUES,
                            }
                        ]
                    }
                ]
            }
        }
    }
