"""dcgm-exporter's counters file (the fields it collects), as a ConfigMap its pods mount.

Format: NVIDIA/dcgm-exporter's etc/default-counters.csv (`DCGM field, Prometheus type, help`);
dcgm-exporter 4.5.3-4.8.2 reads it from DCGM_EXPORTER_COLLECTORS (pkg/cmd/app.go), looks each
field up with go-dcgm's GetFieldID (pkg/dcgm/const_fields.go, current names then legacy ones:
DCGM_FI_DEV_XID_ERRORS is a legacy name that still resolves) and
names each series after the field as written here (internal/pkg/counters/counter_config.go).
"""

from __future__ import annotations

from gpuconf.api.cluster import Cluster
from gpuconf.compiler.plan.artifact import Artifact, manifest
from gpuconf.compiler.plan.dcgm_exporter import (
    COUNTERS_CONFIG_MAP,
    COUNTERS_FILE,
    SOURCE,
)
from gpuconf.compiler.plan.meta import WAVE_CONFIG, metadata
from gpuconf.compiler.resolve.components import dcgm_exporter_runs_anywhere

# etc/default-counters.csv of the release, plus the fields gpuconf's alerts read that it
# leaves commented out (double-bit ECC, clock event reasons; tests/compiler/test_alert_rules.py
# holds every DCGM series a rule reads to this list).
COUNTERS = """\
# DCGM FIELD, Prometheus metric type, help message (dcgm-exporter's counters file format)
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_MEMORY_TEMP, gauge, Memory temperature (in C).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in mJ).
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, Total number of PCIe retries.
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_ENC_UTIL, gauge, Encoder utilization (in %).
DCGM_FI_DEV_DEC_UTIL, gauge, Decoder utilization (in %).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_FB_RESERVED, gauge, Framebuffer memory reserved (in MiB).
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, Total number of NVLink bandwidth counters for all lanes.
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for uncorrectable errors
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS, counter, Number of remapped rows for correctable errors
DCGM_FI_DEV_ROW_REMAP_FAILURE, gauge, Whether remapping of rows has failed
DCGM_FI_DRIVER_VERSION, label, Driver Version
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active sending or receiving data.
DCGM_FI_PROF_PCIE_TX_BYTES, gauge, The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.
DCGM_FI_PROF_PCIE_RX_BYTES, gauge, The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Current clock event reasons (bitmask).
"""


def dcgm_exporter_counters(cluster: Cluster) -> list[Artifact]:
    if not dcgm_exporter_runs_anywhere(cluster):
        return []
    return [
        manifest(
            "telemetry/configmap-dcgm-exporter-counters.yaml",
            "dcgm-exporter-counters-configmap.yaml.j2",
            "ConfigMap",
            {
                "meta": metadata(
                    cluster,
                    COUNTERS_CONFIG_MAP,
                    "telemetry",
                    namespace=cluster.spec.namespace,
                    wave=WAVE_CONFIG,
                ),
                "data": {COUNTERS_FILE: COUNTERS},
            },
            source=SOURCE,
        )
    ]
