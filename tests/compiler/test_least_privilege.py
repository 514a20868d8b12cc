"""Pods get a service-account token only when they call the API server (checkov CKV_K8S_38)."""

from __future__ import annotations

from builders import load_yaml, manifest_paths


def test_only_pods_that_call_the_api_server_get_a_token(compiled_examples) -> None:  # type: ignore[no-untyped-def]
    seen = {True: 0, False: 0}
    for name, tree in compiled_examples.rendered.items():
        for path in manifest_paths(tree):
            obj = load_yaml(tree[path])
            if obj["kind"] != "DaemonSet":
                continue
            pod = obj["spec"]["template"]["spec"]
            # gpuconf node patches its Node's annotations and labels, the driver installer's
            # k8s-driver-manager cordons its Node and evicts GPU pods, and dcgm-exporter watches
            # ResourceSlices when it maps DRA claims; nothing else talks to the API.
            env = {e["name"]: e.get("value") for e in pod["containers"][0].get("env", [])}
            calls_api = (
                pod.get("serviceAccountName") in {"gpuconf-node", "gpuconf-driver-manager"}
                or env.get("KUBERNETES_ENABLE_DRA") == "true"
            )
            assert pod.get("automountServiceAccountToken", True) is calls_api, f"{name}: {path}"
            seen[calls_api] += 1
    assert seen[True]
    assert seen[False]
