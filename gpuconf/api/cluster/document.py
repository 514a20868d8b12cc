"""The Cluster document: the root of a cluster description."""

from __future__ import annotations

from typing import Annotated, Literal

from gpuconf.api.base import (
    INT32_MAX,
    DnsLabel,
    ImageReference,
    KubernetesVersion,
    LabelKey,
    LabelValue,
    Model,
    ResourceDomain,
)
from gpuconf.api.cluster.kueue import Kueue
from gpuconf.api.cluster.nvidia_components import (
    DcgmExporter,
    Dra,
    GpuOperator,
    MigManager,
    NvidiaPlugin,
)
from gpuconf.api.cluster.pool import NodePool
from gpuconf.api.cluster.quota import NamespacePolicy, Quota
from gpuconf.api.cluster.resource_class import ResourceClass
from gpuconf.api.gpu_model import GpuModel
from gpuconf.api.node_facts import DEFAULT_METRICS_PORT, LabelOwner
from gpuconf.api.record import Limits, field
from gpuconf.api.version import ClusterApiVersion


class Metadata(Model):
    name: DnsLabel
    """Cluster name; the rendered tree goes to rendered/<name>/."""


class KubernetesTarget(Model):
    version: KubernetesVersion
    """Target Kubernetes minor version, quoted ("1.34"); decides the API versions emitted."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """Feature gates the cluster's control plane and kubelets run with, where they differ from
    the version's defaults: DRA on 1.32 and 1.33 needs DynamicResourceAllocation (and its API's
    runtime-config); features that are alpha on the target (e.g. DRAExtendedResource) need theirs."""


class Images(Model):
    gpuconf: ImageReference = "ghcr.io/gpuconf/gpuconf:0.1.0"
    """The image that runs `gpuconf node`."""
    nvidia_device_plugin: ImageReference | None = None
    """NVIDIA's device plugin image (plugin: nvidia); defaults to
    nvcr.io/nvidia/k8s-device-plugin:<nvidiaPlugin.version>."""
    driver: ImageReference = "nvcr.io/nvidia/driver"
    """The driver-installer image, without tag: the tag is <version>-<os>."""
    driver_manager: ImageReference = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
    """NVIDIA's k8s-driver-manager, the driver installer's second init container: after
    gpuconf's drain (cordon, GPU pods evicted) it stops the GPU components NVIDIA's labels
    schedule (nvidia.com/gpu.deploy.*, the client DaemonSets v0.12.0 waits for included) and
    unloads the old driver, unless the driver's config digest is unchanged."""


class Health(Model):
    ignored_xids: list[Annotated[int, Limits(ge=0, le=INT32_MAX)]] | None = None
    """XIDs that never make a GPU unhealthy (application faults); default: NVIDIA's catalog's
    RESTART_APP and IGNORE XIDs (13, 31, 43, 45, 63, 68, 69, 92, 121)."""
    reset_xids: list[Annotated[int, Limits(ge=0, le=INT32_MAX)]] | None = None
    """XIDs after which a GPU stays unhealthy until NVML shows it reset or re-enumerated;
    default: the catalog's reset actions (48, 62, 64, 74, 79, 95, 109, 119, 120, 140)."""
    recover_after_seconds: Annotated[int, Limits(ge=0, le=86_400)] = 300
    """Seconds without a new XID of any other class after which the GPU is offered again; 0 never."""


def default_scrapers() -> list[str]:
    """The namespace Prometheus usually runs in."""
    return ["monitoring"]


ScrapeJob = Annotated[str, Limits(pattern=r"^[A-Za-z0-9_:/.-]+$", max_length=253)]
"""A Prometheus `job` label as gpuconf's alerts select it (`job="…"`, `job=~"…|…"`): letters,
digits and `_:/.-`, so nothing in it needs escaping in a PromQL string or an RE2 alternation but
the dot."""


class ScrapeJobs(Model):
    """The `job` labels your own scrape configs give the node runtime's and dcgm-exporter's
    targets, where gpuconf renders no PodMonitor. gpuconf's alerts read the labels as the
    PodMonitors leave them, so those scrape configs must too: `node` (the pod's node) and
    `gpuconf_pool` (the pod's gpuconf.dev/pool label) on every series, `up` included, and for
    dcgm-exporter no `pod`, `namespace` or `container` target label (docs/operations.md)."""

    node: ScrapeJob | None = None
    """The node runtime's (`gpuconf node run`, port metricsPort)."""
    dcgm_exporter: ScrapeJob | None = None
    """dcgm-exporter's."""


class Monitoring(Model):
    pod_monitor: bool = True
    """Render PodMonitors (Prometheus Operator, monitoring.coreos.com/v1) for the node runtime
    and dcgm-exporter. Set false, with prometheusRule, where the cluster has no Prometheus
    Operator CRDs (docs/operations.md)."""
    network_policy: bool = False
    """Render a NetworkPolicy that admits traffic to the metrics port only from scraperNamespaces."""
    scraper_namespaces: Annotated[list[DnsLabel], Limits(min_length=1)] = field(
        default_factory=default_scrapers
    )
    """Namespaces whose pods may scrape the metrics port when networkPolicy is true."""
    extra_labels: dict[LabelKey, LabelValue] = field(default_factory=dict)
    """Labels added to every PodMonitor, PrometheusRule and the dashboard, for the Prometheus
    that selects them (kube-prometheus-stack selects `release: <its release name>`), or
    grafana_dashboard with the value the site's Grafana sidecar loads. Never
    app.kubernetes.io/managed-by or gpuconf.dev/cluster with another value than gpuconf's:
    they mark the objects as gpuconf's."""
    prometheus_rule: bool = True
    """Render a PrometheusRule with gpuconf's alerts (runbooks in docs/runbooks.md); false where
    the cluster has no Prometheus Operator CRDs."""
    dashboard: bool = True
    """Render a Grafana dashboard ConfigMap (label grafana_dashboard: "1", for Grafana's sidecar)."""
    scrape_jobs: ScrapeJobs | None = None
    """With podMonitor false and prometheusRule true: the job labels of the scrape configs that
    scrape the node runtime and dcgm-exporter instead, which the alerts select (with a
    PodMonitor the job is its own, "<namespace>/<name>")."""


class NodeLabels(Model):
    owner: LabelOwner = "gpuconf"
    """Who writes GPU Feature Discovery's labels (nvidia.com/gpu.product, gpu.count, …) on the
    nodes gpuconf's node runtime serves: gpuconf (its node runtime writes them, with the same
    keys and values as GFD), gfd (NVIDIA's GFD or the GPU Operator runs; gpuconf writes only
    gpuconf.dev/pool and class.gpuconf.dev/<class>), off (gpuconf writes no labels)."""
    rename_by_default: bool = False
    """As NVIDIA's plugin config: false appends -SHARED to gpu.product on shared GPUs, as GFD
    does by default; true keeps the plain product name."""


class NodeSettings(Model):
    drift_policy: Literal["warn", "strict"] = "warn"
    """On inventory drift: warn and advertise what is there, or advertise only matching GPUs."""
    device_list_strategy: Literal["cdi", "volume-mounts", "envvar"] | None = None
    """How allocated GPUs reach the container runtime: CDI device names, NVIDIA's volume-mounts,
    or (legacy) the NVIDIA_VISIBLE_DEVICES variable. Default per pool: cdi where the engine
    surely has CDI on (containerd 2.x), else volume-mounts (docs/isolation.md)."""
    health: Health = field(default_factory=Health)
    """GPU health checking."""
    metrics_port: Annotated[int, Limits(ge=1024, le=65535)] = DEFAULT_METRICS_PORT
    """Port for Prometheus metrics and /healthz on each node (9402: the DCGM exporter has 9400)."""
    monitoring: Monitoring = field(default_factory=Monitoring)
    """Scraping the node runtime's metrics."""
    labels: NodeLabels = field(default_factory=NodeLabels)
    """The node labels `gpuconf node run` publishes on its own Node."""


class ClusterSpec(Model):
    kubernetes: KubernetesTarget
    """The Kubernetes version the manifests target."""
    allocation: Literal["device-plugin", "dra"] = "device-plugin"
    """How pods get GPUs: extended resources from a device plugin, or Dynamic Resource Allocation."""
    plugin: Literal["gpuconf", "nvidia"] = "gpuconf"
    """Device-plugin mode: gpuconf's node runtime, or NVIDIA's device plugin with its config."""
    resource_domain: ResourceDomain = "gpuconf.dev"
    """Domain of the default resource names (<domain>/<class>): a DNS subdomain of at most 244
    characters outside kubernetes.io (Kubernetes' extended-resource rule)."""
    namespace: DnsLabel = "gpuconf-system"
    """Namespace for gpuconf's own DaemonSets and ConfigMaps."""
    images: Images = field(default_factory=Images)
    """Container images."""
    node: NodeSettings = field(default_factory=NodeSettings)
    """Settings for `gpuconf node` on every node."""
    nvidia_plugin: NvidiaPlugin = field(default_factory=NvidiaPlugin)
    """NVIDIA's device plugin (plugin: nvidia)."""
    dra: Dra = field(default_factory=Dra)
    """NVIDIA's DRA driver (allocation: dra)."""
    dcgm_exporter: DcgmExporter = field(default_factory=DcgmExporter)
    """NVIDIA's dcgm-exporter: GPU telemetry, attributed to the pods holding the GPUs."""
    mig_manager: MigManager = field(default_factory=MigManager)
    """Where the GPU Operator's MIG manager reads the MIG layouts."""
    kueue: Kueue | None = None
    """Quotas admitted by Kueue: ResourceFlavors per pool, a ClusterQueue per tenant and a
    LocalQueue per quota namespace, from the same classes and quotas (docs/quotas.md)."""
    gpu_operator: GpuOperator | None = None
    """The GPU Operator, when the cluster runs it: gpuconf renders its Helm values and
    ClusterPolicy patch turning off what gpuconf's pools replace and handing MIG to it."""
    gpu_models: list[GpuModel] = field(default_factory=list)
    """GPU models the catalog lacks, usable wherever a catalog name is (names must not clash)."""
    node_pools: Annotated[list[NodePool], Limits(min_length=1)]
    """The GPU node pools."""
    resource_classes: list[ResourceClass] = field(default_factory=list)
    """Named, selected sets of GPUs that workloads request."""
    quotas: list[Quota] = field(default_factory=list)
    """Per-namespace limits per class."""
    namespace_policy: NamespacePolicy = "create"
    """Default for every quota's namespacePolicy: create, adopt or external."""
    templates: Annotated[str, Limits(min_length=1)] | None = None
    """A folder of site templates, relative to this file: each replaces or extends gpuconf's
    template of the same name (docs/templates.md); `render --check` compares their output."""

    def driver_versions(self) -> dict[str, str | None]:
        """Each pool's declared driver version by pool name; None where it declares none."""
        return {p.name: p.driver.version if p.driver else None for p in self.node_pools}


class Cluster(Model):
    api_version: ClusterApiVersion
    """gpuconf.dev/v1alpha2 (files at gpuconf.dev/v1alpha1 are still read: `gpuconf migrate`
    rewrites them)."""
    kind: Literal["Cluster"]
    """Always Cluster."""
    metadata: Metadata
    spec: ClusterSpec
