"""The test control plane as the tests call it, through the Kubernetes Python client gpuconf
ships with: server-side apply (as Argo CD and Flux do), get, list, delete and raw requests,
addressed by manifest. Paths come from the server's own discovery."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes

FIELD_MANAGER = "gpuconf"
APPLY = "application/apply-patch+yaml"


class Refused(Exception):
    """The API server said no: its HTTP status and its own message."""

    def __init__(self, status: int, message: str, body: dict[str, Any]) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.body = body


@dataclass(frozen=True)
class Kind:
    """Where a kind lives on the server: its group-version path, plural name and scope."""

    prefix: str
    plural: str
    namespaced: bool


@dataclass(frozen=True)
class Response:
    status: int
    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def identity(document: dict[str, Any]) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name): what the server knows an object by."""
    metadata = document.get("metadata", {})
    return (
        document["apiVersion"],
        document["kind"],
        metadata.get("namespace", ""),
        metadata["name"],
    )


class Server:
    def __init__(self, client: kubernetes.client.ApiClient) -> None:
        self.client = client
        self._kinds: dict[str, dict[str, Kind]] = {}

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path, headers: dict[str, str] | None = None) -> Server:
        """The admin's connection; `headers` adds e.g. Impersonate-User to every request."""
        client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        for name, value in (headers or {}).items():
            client.set_default_header(name, value)
        return cls(client)

    @classmethod
    def with_token(cls, kubeconfig: Path, token: str) -> Server:
        """The same server, authenticated by a bearer token instead of the admin certificate."""
        admin = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
        configuration = kubernetes.client.Configuration()
        configuration.host = admin.configuration.host
        configuration.ssl_ca_cert = admin.configuration.ssl_ca_cert
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
        return cls(kubernetes.client.ApiClient(configuration))

    def pod_token(self, namespace: str, account: str, pod: str) -> str:
        """A token for `account` bound to its pod `pod`, as the kubelet mounts one: the server
        puts the pod's node in the token's user info (authentication.kubernetes.io/node-name),
        which own-Node admission policies check."""
        found = self.get("v1", "Pod", namespace, pod)
        assert found is not None, f"no pod {namespace}/{pod}"
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": found["metadata"]["uid"],
                },
                "expirationSeconds": 3600,
            },
        }
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
        token: str = self.request("POST", path, request).body["status"]["token"]
        return token

    # --- raw requests ---------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: list[tuple[str, str]] | None = None,
        content_type: str = "application/json",
    ) -> Response:
        # The client writes a dict as JSON for any +json or +yaml content type (JSON is YAML).
        method, url, headers, payload, _ = self.client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.client.call_api(method, url, headers, payload)
        text = response.read().decode()
        data = json.loads(text) if text.startswith("{") else {"message": text}
        if response.status >= 400:
            raise Refused(response.status, data.get("message", text), data)
        warnings = response.headers.getlist("Warning") if response.headers else []
        return Response(response.status, data, list(warnings))

    # --- by kind --------------------------------------------------------------------------------

    def kind(self, api_version: str, kind: str) -> Kind:
        if api_version not in self._kinds:
            prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            resources = self.request("GET", prefix).body["resources"]
            self._kinds[api_version] = {
                r["kind"]: Kind(prefix, r["name"], r["namespaced"])
                for r in resources
                if "/" not in r["name"]
            }
        try:
            return self._kinds[api_version][kind]
        except KeyError:
            raise Refused(404, f"the server has no {kind} in {api_version}", {}) from None

    def forget_kinds(self) -> None:
        """Read discovery again on next use (after CRDs were installed)."""
        self._kinds.clear()

    def path(self, api_version: str, kind: str, namespace: str = "", name: str = "") -> str:
        where = self.kind(api_version, kind)
        path = where.prefix
        if where.namespaced and namespace:
            path += f"/namespaces/{namespace}"
        path += f"/{where.plural}"
        return f"{path}/{name}" if name else path

    def apply(
        self, document: dict[str, Any], *, dry_run: bool = False, manager: str = FIELD_MANAGER
    ) -> Response:
        """Server-side apply with strict field validation, as `kubectl apply --server-side`."""
        query = [("fieldManager", manager), ("fieldValidation", "Strict")]
        if dry_run:
            query.append(("dryRun", "All"))
        return self.request("PATCH", self.path(*identity(document)), document, query, APPLY)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", self.path(api_version, kind, namespace, name)).body
        except Refused as refused:
            if refused.status == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, label_selector: str = "") -> list[dict[str, Any]]:
        query = [("labelSelector", label_selector)] if label_selector else []
        items: list[dict[str, Any]] = self.request(
            "GET", self.path(api_version, kind), query=query
        ).body["items"]
        return items

    def create(self, document: dict[str, Any], *, dry_run: bool = False) -> Response:
        api_version, kind, namespace, _ = identity(document)
        query = [("dryRun", "All")] if dry_run else []
        return self.request("POST", self.path(api_version, kind, namespace), document, query)

    def refusal(self, document: dict[str, Any]) -> Refused | None:
        """How the server refuses a dry-run create of `document`, if it does."""
        try:
            self.create(document, dry_run=True)
        except Refused as refused:
            return refused
        return None

    def delete(self, api_version: str, kind: str, namespace: str, name: str) -> None:
        """Delete at once: with no kubelet, a pod on a node would otherwise wait forever for
        the kubelet to confirm its graceful end."""
        path = self.path(api_version, kind, namespace, name)
        self.request("DELETE", path, query=[("gracePeriodSeconds", "0")])
