"""The constrained string types every record uses, and the base they share."""

from __future__ import annotations

from typing import Annotated

from gpuconf.api.record import Limits, Record

# Each pattern is named in validate.py's messages; keep the two in step.
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
EXTENDED_RESOURCE = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$"
IMAGE = r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$"
KUBE_VERSION = r"^1\.[0-9]{2}$"
DRIVER_VERSION = r"^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$"
JETPACK_VERSION = r"^[0-9]\.[0-9]{1,2}(\.[0-9]{1,2})?$"
GPU_UUID = r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
QUANTITY = r"^[0-9]+(Ki|Mi|Gi|Ti)?$"
MIG_PROFILE = r"^[0-9]g\.[0-9]+gb$"
ABSOLUTE_PATH = r"^/[A-Za-z0-9._/-]*$"

# Kubernetes stores integer fields as int32 or int64 (its API types say which); a value
# outside the type is refused by the API server, so it is refused here, where the file says.
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

DnsLabel = Annotated[str, Limits(pattern=DNS_LABEL)]
DnsSubdomain = Annotated[str, Limits(pattern=DNS_SUBDOMAIN, max_length=253)]
LabelKey = Annotated[str, Limits(pattern=LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, Limits(pattern=LABEL_VALUE)]
ExtendedResourceName = Annotated[str, Limits(pattern=EXTENDED_RESOURCE, max_length=317)]
ImageReference = Annotated[str, Limits(pattern=IMAGE, max_length=512)]
KubernetesVersion = Annotated[str, Limits(pattern=KUBE_VERSION)]


def kubernetes_minor(version: KubernetesVersion) -> int:
    """ "1.34" -> 34; the pattern above admits only 1.x."""
    return int(version.split(".")[1])


def version_parts(version: str) -> tuple[int, int, int]:
    """ "550.54" -> (550, 54, 0), "v0.20.0" -> (0, 20, 0): dotted versions compared by value."""
    major, minor, patch = ([int(part) for part in version.removeprefix("v").split(".")] + [0, 0])[
        :3
    ]
    return (major, minor, patch)


DriverVersion = Annotated[str, Limits(pattern=DRIVER_VERSION)]
JetPackVersion = Annotated[str, Limits(pattern=JETPACK_VERSION)]
GpuUuid = Annotated[str, Limits(pattern=GPU_UUID)]
MemoryQuantity = Annotated[str, Limits(pattern=QUANTITY)]
MigProfileName = Annotated[str, Limits(pattern=MIG_PROFILE)]
AbsolutePath = Annotated[str, Limits(pattern=ABSOLUTE_PATH, max_length=4096)]


class Model(Record):
    """Every cluster-file type: frozen, strict, camelCase keys, unknown keys rejected."""
