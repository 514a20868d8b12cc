"""A driver upgrade's Node side, through the API server: cordon the node, evict the pods holding
its GPUs through the Eviction API (policy/v1, so PodDisruptionBudgets are honoured: a 429 is
retried until the timeout), and once the new driver answers, uncordon it; each step recorded in
the node's `gpuconf.dev/driver-upgrade` label (api/driver_upgrade.py).

NVIDIA's k8s-driver-manager runs between the two (plan/driver_manager.py) with its own eviction
off: it uncordons as soon as the old driver is unloaded (cmd/driver-manager/main.go v0.12.0,
uninstallDriver), before the new one is installed, and one owner of the cordon is needed."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

from kubernetes.client import (
    ApiClient,
    ApisApi,
    Configuration,
    CoreV1Api,
    CustomObjectsApi,
    V1Eviction,
    V1ObjectMeta,
)
from kubernetes.client.exceptions import ApiException

from gpuconf.api.driver_upgrade import (
    CORDONED_ANNOTATION,
    EVICTING,
    EVICTION_TIMED_OUT,
    INSTALLING,
    READY,
    UPGRADE_LABEL,
    VERSION_LABEL,
    UpgradeState,
)
from gpuconf.errors import UserError
from gpuconf.node import in_cluster
from gpuconf.node.gpu_pods import (
    ClaimReader,
    Pod,
    holds_gpu,
    is_daemonset_pod,
    pod_name,
    stopped_by_driver_manager,
)
from gpuconf.node.own_node_client import ApiError, status_message

log = logging.getLogger(__name__)

CONFLICT, NOT_FOUND, TOO_MANY_REQUESTS = 409, 404, 429
PATCH_ATTEMPTS = 10
RESOURCE_GROUP = "resource.k8s.io"


class Blocked(NamedTuple):
    pod: str
    reason: str


def _json(response: Any) -> Any:
    return json.loads(response.data)


def claim_reader(client: ApiClient) -> ClaimReader:
    """Reads ResourceClaims in whichever resource.k8s.io version the server prefers (v1 from
    1.34; v1beta1/v1beta2 where an older server has DRA on), none where it serves none."""
    groups = _json(ApisApi(client).get_api_versions(_preload_content=False))["groups"]
    version = next(
        (g["preferredVersion"]["version"] for g in groups if g["name"] == RESOURCE_GROUP), None
    )
    custom = CustomObjectsApi(client)

    def read(namespace: str, name: str) -> Mapping[str, Any] | None:
        if version is None:
            return None
        try:
            found = custom.get_namespaced_custom_object(
                RESOURCE_GROUP, version, namespace, "resourceclaims", name
            )
        except ApiException as error:
            if error.status == NOT_FOUND:
                return None
            raise
        return found if isinstance(found, dict) else None

    return read


class NodeUpgrade:
    def __init__(
        self,
        client: ApiClient,
        node_name: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api = CoreV1Api(client)
        self.node_name = node_name
        self.sleep = sleep
        """Between the eviction turns (tests play the kubelet there)."""

    # --- the Node ---------------------------------------------------------------------------

    def _patch(self, change: Callable[[Mapping[str, Any]], dict[str, Any]]) -> None:
        """Patch the Node with what `change` makes of it, guarded by its resourceVersion: when
        someone else changed it meanwhile (409), read it again and redo the change."""
        for _ in range(PATCH_ATTEMPTS):
            node = _json(self.api.read_node(self.node_name, _preload_content=False))
            body = change(node)
            body.setdefault("metadata", {})["resourceVersion"] = node["metadata"]["resourceVersion"]
            try:
                self.api.patch_node(self.node_name, body)
                return
            except ApiException as error:
                if error.status != CONFLICT:
                    raise
                log.info("node %s changed meanwhile; patching again", self.node_name)
        raise UserError(f"node {self.node_name} kept changing: {PATCH_ATTEMPTS} conflicts in a row")

    def set_state(self, state: UpgradeState) -> None:
        self._patch(lambda _: {"metadata": {"labels": {UPGRADE_LABEL: state}}})

    def cordon(self) -> None:
        """Cordon and mark the cordon as gpuconf's, unless the node is cordoned already by
        someone else (then it stays theirs, and is left cordoned at the end)."""

        def change(node: Mapping[str, Any]) -> dict[str, Any]:
            body: dict[str, Any] = {"metadata": {"labels": {UPGRADE_LABEL: EVICTING}}}
            annotations = node["metadata"].get("annotations") or {}
            if (node.get("spec") or {}).get(
                "unschedulable"
            ) and CORDONED_ANNOTATION not in annotations:
                log.info("node %s is cordoned by someone else; it stays so", self.node_name)
                return body
            body["metadata"]["annotations"] = {CORDONED_ANNOTATION: "true"}
            body["spec"] = {"unschedulable": True}
            return body

        self._patch(change)

    def finish(self, version: str) -> None:
        """The new driver answers with `version`: record it and lift gpuconf's own cordon."""

        def change(node: Mapping[str, Any]) -> dict[str, Any]:
            labels = {UPGRADE_LABEL: READY, VERSION_LABEL: version}
            body: dict[str, Any] = {"metadata": {"labels": labels}}
            if CORDONED_ANNOTATION in (node["metadata"].get("annotations") or {}):
                body["metadata"]["annotations"] = {CORDONED_ANNOTATION: None}
                body["spec"] = {"unschedulable": None}
            return body

        self._patch(change)

    # --- the GPU pods -----------------------------------------------------------------------

    def gpu_pods(self, resources: Collection[str], read_claim: ClaimReader) -> list[Pod]:
        listed = self.api.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={self.node_name}", _preload_content=False
        )
        pods: list[Pod] = _json(listed)["items"]
        return sorted((p for p in pods if holds_gpu(p, resources, read_claim)), key=pod_name)

    def _evict(self, pod: Pod) -> str | None:
        """Ask the Eviction API to evict `pod`; the reason it stays, or None."""
        meta = pod["metadata"]
        eviction = V1Eviction(metadata=V1ObjectMeta(name=meta["name"], namespace=meta["namespace"]))
        try:
            self.api.create_namespaced_pod_eviction(meta["name"], meta["namespace"], eviction)
        except ApiException as error:
            if error.status == NOT_FOUND:
                return None
            if error.status == TOO_MANY_REQUESTS:
                return "its PodDisruptionBudget refuses the eviction (429)"
            raise
        log.info("evicted %s", pod_name(pod))
        return "terminating"

    def evict_gpu_pods(
        self,
        resources: Collection[str],
        read_claim: ClaimReader,
        timeout: float,
        interval: float,
    ) -> list[Blocked]:
        """Evict the node's GPU pods and wait for them to go, retrying refused evictions every
        `interval` s; after `timeout` s (0: never) give up. Returns the pods left, with why."""
        deadline = time.monotonic() + timeout
        reported: dict[str, str] = {}
        while True:
            blocked = []
            for pod in self.gpu_pods(resources, read_claim):
                name = pod_name(pod)
                if is_daemonset_pod(pod) and stopped_by_driver_manager(pod):
                    # The driver manager stops it next (evictAllGPUOperatorComponents pauses
                    # its nvidia.com/gpu.deploy.* label and waits for it): not ours to wait for.
                    if name not in reported:
                        log.info("%s is left to the driver manager to stop", name)
                        reported[name] = "left to the driver manager"
                    continue
                if is_daemonset_pod(pod):
                    reason = "a DaemonSet's pod: it would come back at once, so it is not evicted"
                elif pod["metadata"].get("deletionTimestamp"):
                    reason = "terminating"
                else:
                    reason = self._evict(pod) or ""
                if not reason:
                    continue
                if reported.get(name) != reason:
                    log.info("%s stays: %s", name, reason)
                    reported[name] = reason
                blocked.append(Blocked(name, reason))
            if not blocked:
                return []
            if timeout and time.monotonic() >= deadline:
                return blocked
            self.sleep(interval)

    def drain(
        self, resources: Collection[str], read_claim: ClaimReader, timeout: float, interval: float
    ) -> list[Blocked]:
        """Cordon, evict, and record the outcome: `installing` once no GPU pod is left, or
        `eviction-timed-out` (still cordoned) with the pods that stayed."""
        self.cordon()
        blocked = self.evict_gpu_pods(resources, read_claim, timeout, interval)
        self.set_state(EVICTION_TIMED_OUT if blocked else INSTALLING)
        return blocked


def client_configuration(pod: in_cluster.InClusterConfig) -> Configuration:
    """The Kubernetes client set up from the pod's view (in_cluster.load), its token re-read
    every minute (in_cluster.TokenFile), as a drain can outlast it. Not the client's own
    InClusterConfigLoader: it sends the file untrimmed and unchecked (a line break would put
    the token in an error message) and fails the request when a re-read fails."""
    configuration = Configuration()
    configuration.host = pod.server
    configuration.ssl_ca_cert = str(pod.ca_file)
    configuration.api_key_prefix = {"BearerToken": "Bearer"}

    def refresh(current: Configuration) -> None:  # called before every request
        current.api_key = {"BearerToken": pod.token.bearer()}

    refresh(configuration)  # the client sends no token unless one is set before the hook runs
    # The client's own annotation of the hook is `None` (kubernetes/client/configuration.py).
    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
    return configuration


@contextmanager
def in_cluster_client() -> Iterator[ApiClient]:
    """The pod's own service account, as the kubelet mounts its token; a refusal or an
    unreachable server ends the command with what the server said (the kubelet retries it).
    These one-shot commands keep the Kubernetes client (evictions, lists, DRA claims); the
    node runtime's long-running path uses own_node_client, which needs none of it."""
    from urllib3.exceptions import HTTPError

    try:
        with ApiClient(client_configuration(in_cluster.load())) as client:
            yield client
    except ApiException as error:
        answer = ApiError(error.status, status_message(error.body, str(error.reason)))
        raise UserError(str(answer)) from None
    except (HTTPError, in_cluster.InClusterConfigError) as error:
        raise UserError(f"cannot reach the API server: {error}") from None
