"""Reading a live cluster with the Kubernetes client, the way kubectl users expect: --kubeconfig,
else $KUBECONFIG (a list of files, merged), else ~/.kube/config; --context, else the current
one; in a pod with none of those, the pod's service account. Lists are read in pages
(limit/continue); a continue token that expired (410 Gone) restarts the list, as kubectl does."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from gpuconf.errors import UserError

PAGE_SIZE = 500
# A list restarted this often while it pages is a cluster changing faster than it can be read.
MAX_RESTARTS = 3
READ_ONLY_ROLE_HINT = (
    "gpuconf needs get/list on nodes, resourcequotas and (DRA) deviceclasses and resourceslices: "
    "bind the ClusterRole in "
    "rendered/<cluster>/cluster/clusterrole-gpuconf-status.yaml to this user"
)

Listing = Callable[..., Any]
DRA_GROUP = "resource.k8s.io"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
"""Newest first: GA in 1.34, v1beta2 in 1.33, v1beta1 in 1.32."""


class _NotServed(Exception):
    """The API server does not serve this resource (404 on its list)."""


class ClusterApi:
    """The lists `gpuconf status` and `gpuconf import cluster` read, as plain JSON data."""

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self._core = client.CoreV1Api(api_client)
        self._version = client.VersionApi(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self.server: str = api_client.configuration.host

    def kubernetes_version(self) -> str:
        """The server's "major.minor", as `kubectl version` shows it (a trailing + dropped)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            response: Any = self._version.get_code(_preload_content=False)  # raw: no model
            info = json.loads(response.data)
        except ApiException as error:
            raise _refused(error, "the version", self.server) from None
        except (OSError, HTTPError) as error:
            raise UserError(f"{self.server}: cannot read the version: {_why(error)}") from None
        return f"{info['major']}.{str(info['minor']).rstrip('+')}"

    def nodes(self) -> list[dict[str, Any]]:
        return self._list(self._core.list_node, "nodes")

    def resource_quotas(self) -> list[dict[str, Any]]:
        return self._list(self._core.list_resource_quota_for_all_namespaces, "resourcequotas")

    def dra_objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """DeviceClasses and ResourceSlices from the newest resource.k8s.io version served; None
        where the cluster serves none (DRA off, or before 1.32)."""
        for version in DRA_VERSIONS:
            try:
                classes, slices = (
                    self._list(
                        partial(
                            self._custom.list_cluster_custom_object, DRA_GROUP, version, plural
                        ),
                        f"{plural}.{DRA_GROUP}/{version}",
                        may_be_absent=True,
                    )
                    for plural in ("deviceclasses", "resourceslices")
                )
            except _NotServed:
                continue
            return classes, slices
        return None

    def _list(
        self, listing: Listing, what: str, may_be_absent: bool = False
    ) -> list[dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        for _ in range(MAX_RESTARTS + 1):
            items: list[dict[str, Any]] = []
            token: str | None = None
            try:
                while True:
                    page = self._page(listing, token)
                    items += page.get("items") or []
                    token = (page.get("metadata") or {}).get("continue") or None
                    if token is None:
                        return items
            except ApiException as error:
                if error.status == 410 and token is not None:
                    continue  # the continue token expired: read the whole list again
                if error.status == 404 and may_be_absent:
                    raise _NotServed(what) from None
                raise _refused(error, what, self.server) from None
            except (OSError, HTTPError) as error:
                raise UserError(f"{self.server}: cannot list {what}: {_why(error)}") from None
        raise UserError(f"{self.server}: {what} changed while listed {MAX_RESTARTS + 1} times")

    @staticmethod
    def _page(listing: Listing, token: str | None) -> dict[str, Any]:
        options: dict[str, Any] = {"limit": PAGE_SIZE, "_preload_content": False}
        if token is not None:
            options["_continue"] = token
        response = listing(**options)
        page: dict[str, Any] = json.loads(response.data)
        return page


def _refused(error: Any, what: str, server: str) -> UserError:
    message = _status_message(error.body) or error.reason
    if error.status == 403:
        return UserError(f"{server}: forbidden to list {what}: {message} ({READ_ONLY_ROLE_HINT})")
    if error.status == 401:
        return UserError(f"{server}: not authorised: {message} (check the kubeconfig's user)")
    return UserError(f"{server}: listing {what} failed ({error.status}): {message}")


def _why(error: Exception) -> str:
    """Why a request failed, without urllib3's retry wrapping (the client retries a refused
    connection, then raises MaxRetryError around the reason)."""
    reason = getattr(error, "reason", None)
    return " ".join(str(reason if isinstance(reason, Exception) else error).split())


def _status_message(body: Any) -> str:
    """The message of a Kubernetes Status object, the body of every API error."""
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return ""
    return str(status.get("message", "")) if isinstance(status, dict) else ""


def connect(kubeconfig: Path | None, context: str | None) -> ClusterApi:
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    configuration = client.Configuration()
    if kubeconfig is not None and (kubeconfig.is_dir() or not kubeconfig.exists()):
        # kubectl too: an explicit --kubeconfig must exist (a $KUBECONFIG entry may be missing);
        # a pipe (--kubeconfig <(…)) is read as kubectl and the client read it.
        why = "a folder, not a file" if kubeconfig.is_dir() else "no such file"
        raise UserError(f"cannot load the cluster's configuration: {kubeconfig}: {why}")
    try:
        if kubeconfig is None and context is None and _in_pod_without_kubeconfig():
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            files = _kubeconfig_files(kubeconfig)
            try:
                config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=files,
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                )
            except (ConfigException, OSError):
                raise
            except Exception as error:  # the client's loader indexes the file's data unchecked
                summary = " ".join(str(error).split())
                raise UserError(
                    f"cannot load the cluster's configuration: {files}: not a kubeconfig "
                    f"kubectl would read ({type(error).__name__}: {summary})"
                ) from None
    except (ConfigException, OSError) as error:
        raise UserError(f"cannot load the cluster's configuration: {error}") from None
    return ClusterApi(client.ApiClient(configuration))


def _kubeconfig_files(given: Path | None) -> str:
    """The client reads $KUBECONFIG once, at its import; read now, it follows this process's
    environment. Several files (separated as in $PATH) are merged, first one winning."""
    if given is not None:
        return str(given)
    return os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")


def _in_pod_without_kubeconfig() -> bool:
    """kubectl's order: a kubeconfig wins; a pod's service account is used only without one."""
    if not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return False
    files = os.environ.get("KUBECONFIG", "").split(os.pathsep)
    return (
        not any(f and Path(f).is_file() for f in files)
        and not (Path.home() / ".kube" / "config").is_file()
    )
