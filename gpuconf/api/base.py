"""The constrained string types every record uses, and the base they share."""

from __future__ import annotations

import re
from typing import Annotated

from gpuconf.api.kubernetes_names import (
    EXTENDED_RESOURCE_PREFIX_MAX,
    LABEL_VALUE_MAX,
    NATIVE_DOMAIN,
    QUALIFIED_NAME_MAX,
    QUALIFIED_PREFIX_MAX,
    QUOTA_PREFIX,
    SUBDOMAIN,
)
from gpuconf.api.node_facts import MIG_CONFIG_PREFIX
from gpuconf.api.record import Limits, Record

# Each pattern is named in shape_errors.py's messages, and api/kubernetes_names.py says which of
# Kubernetes' rules a value breaks (and cites them); keep the three in step. A lookahead caps a
# prefix's length: such patterns need Python's regular expressions (`regex_engine="python-re"`;
# pydantic-core's default, Rust's regex, has no lookaround); JSON Schema's ECMA-262 has them.
# In Python's, `$` also matches before a final line break: those patterns end in _END.
_END = r"(?!\n)$"
_NAME_PART = rf"[A-Za-z0-9]([-A-Za-z0-9_.]{{0,{QUALIFIED_NAME_MAX - 2}}}[A-Za-z0-9])?"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
DNS_SUBDOMAIN = rf"^{SUBDOMAIN}$"
LABEL_KEY = rf"^((?=[^/]{{1,{QUALIFIED_PREFIX_MAX}}}/){SUBDOMAIN}/)?{_NAME_PART}{_END}"
LABEL_VALUE = rf"^(([A-Za-z0-9][-A-Za-z0-9_.]{{0,{LABEL_VALUE_MAX - 2}}})?[A-Za-z0-9])?$"
_NOT_QUOTA = rf"(?!{re.escape(QUOTA_PREFIX)})"
EXTENDED_RESOURCE = (
    rf"^{_NOT_QUOTA}(?![^/]*{re.escape(NATIVE_DOMAIN)}/)(?=[^/]{{1,{EXTENDED_RESOURCE_PREFIX_MAX}}}/){SUBDOMAIN}"
    rf"/[a-z0-9]([-a-z0-9_.]{{0,{QUALIFIED_NAME_MAX - 2}}}[a-z0-9])?{_END}"
)
RESOURCE_DOMAIN = (
    rf"^{_NOT_QUOTA}(?!.*{re.escape(NATIVE_DOMAIN)}$)(?=.{{1,{EXTENDED_RESOURCE_PREFIX_MAX}}}$)"
    rf"{SUBDOMAIN}{_END}"
)
CONFIG_MAP_FILE = "configmap-{}.yaml"
"""The file a ConfigMap named by the cluster file is rendered to."""
CONFIG_MAP_NAME = rf"^(?:{SUBDOMAIN})$"
"""A DNS subdomain (NameIsDNSSubdomain) short enough for its file's name, CONFIG_MAP_FILE, to
fit NAME_MAX (255 on Linux file systems). The same language as DNS_SUBDOMAIN, spelt apart on
purpose: shape_errors.py words its message by the pattern's text."""
CONFIG_MAP_NAME_MAX = 255 - len(CONFIG_MAP_FILE.format(""))
POOL_NAME_MAX = 63 - len(MIG_CONFIG_PREFIX)
"""gpuconf-<pool> is the pool's nvidia.com/mig.config node label value, at most 63 characters."""
POOL_NAME = rf"^[a-z0-9]([-a-z0-9]{{0,{POOL_NAME_MAX - 2}}}[a-z0-9])?$"
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
PoolName = Annotated[str, Limits(pattern=POOL_NAME)]
DnsSubdomain = Annotated[str, Limits(pattern=DNS_SUBDOMAIN, max_length=253)]
ConfigMapName = Annotated[str, Limits(pattern=CONFIG_MAP_NAME, max_length=CONFIG_MAP_NAME_MAX)]


def _qualified(pattern: str, prefix_max: int) -> Limits:
    """A qualified name `<prefix>/<name>`: its length cap is the pattern's caps summed (pydantic's
    Rust engine has no look-ahead, hence Python's)."""
    return Limits(
        pattern=pattern, max_length=prefix_max + 1 + QUALIFIED_NAME_MAX, regex_engine="python-re"
    )


LabelKey = Annotated[str, _qualified(LABEL_KEY, QUALIFIED_PREFIX_MAX)]
"""A label, taint or toleration key: a qualified name."""
LabelValue = Annotated[str, Limits(pattern=LABEL_VALUE)]
ExtendedResourceName = Annotated[str, _qualified(EXTENDED_RESOURCE, EXTENDED_RESOURCE_PREFIX_MAX)]
ResourceDomain = Annotated[str, Limits(pattern=RESOURCE_DOMAIN, regex_engine="python-re")]
"""The prefix of extended resource names <domain>/<name>."""
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
