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
            # gpuconf node patches its Node's drift annotations, and the driver installer's
            # k8s-driver-manager cordons its Node and evicts GPU pods; nothing else talks to the API.
            calls_api = pod.get("serviceAccountName") in {"gpuconf-node", "gpuconf-driver-manager"}
            assert pod.get("automountServiceAccountToken", True) is calls_api, f"{name}: {path}"
            seen[calls_api] += 1
    assert seen[True]
    assert seen[False]
