"""kube-apiserver enforces what a schema cannot see: CEL in a DeviceClass selector and in a
ValidatingAdmissionPolicy must compile, or the object is refused. A policy whose expressions
compile but do not type-check against the resources it matches is admitted; the
validatingadmissionpolicy-status controller (kube-controller-manager) then reports it in
status.typeChecking, as pkg/controller/validatingadmissionpolicystatus does."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
import yaml
from builders import RENDERED
from control_plane.server import Refused, Server, identity

DEVICE_CLASS = RENDERED / "dra-lab" / "cluster" / "deviceclass-big-memory.yaml"
NODE_POLICY = RENDERED / "lab" / "cluster" / "validatingadmissionpolicy-gpuconf-node.yaml"


def _load(path: Any, name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["metadata"] = {"name": name}
    return document


def _refusal(server: Server, document: dict[str, Any]) -> Refused:
    """The server's refusal of `document`; admitted by mistake, it is removed again."""
    api_version, kind, _, name = identity(document)
    try:
        server.apply(document)
    except Refused as refused:
        return refused
    server.delete(api_version, kind, "", name)
    raise AssertionError(f"kube-apiserver admitted {kind} {name}")


@pytest.mark.parametrize(
    ("typo", "expected"),
    [
        pytest.param(
            ("device.attributes", "device.atributes"), "undefined field 'atributes'", id="field"
        ),
        pytest.param(("== 'gpu' &&", "== 'gpu' && &&"), "Syntax error", id="syntax"),
    ],
)
def test_a_device_class_whose_cel_selector_does_not_compile_is_refused(
    api_server: Server, typo: tuple[str, str], expected: str
) -> None:
    good = _load(DEVICE_CLASS, "gpuconf-test-cel-typo")
    api_server.apply(good, dry_run=True)  # the class as rendered is admitted
    broken = copy.deepcopy(good)
    selector = broken["spec"]["selectors"][0]["cel"]
    assert typo[0] in selector["expression"]
    selector["expression"] = selector["expression"].replace(typo[0], typo[1], 1)
    refused = _refusal(api_server, broken)
    assert refused.status == 422
    assert "spec.selectors[0].cel.expression" in refused.message
    assert "compilation failed" in refused.message
    assert expected in refused.message


@pytest.mark.parametrize(
    ("typo", "expected"),
    [
        pytest.param(
            ("object.metadata.name]", "objekt.metadata.name]"),
            "undeclared reference to 'objekt'",
            id="undeclared",
        ),
        pytest.param(
            ("== [object.metadata.name]", "== [object.metadata.name"), "Syntax error", id="syntax"
        ),
    ],
)
def test_a_validating_admission_policy_that_does_not_compile_is_refused(
    api_server: Server, typo: tuple[str, str], expected: str
) -> None:
    good = _load(NODE_POLICY, "gpuconf-test-vap-typo")
    api_server.apply(good, dry_run=True)
    broken = copy.deepcopy(good)
    validation = broken["spec"]["validations"][0]
    assert typo[0] in validation["expression"]
    validation["expression"] = validation["expression"].replace(typo[0], typo[1], 1)
    refused = _refusal(api_server, broken)
    assert refused.status == 422
    assert "spec.validations[0].expression" in refused.message
    assert "compilation failed" in refused.message
    assert expected in refused.message


def _type_checking(server: Server, name: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        policy = server.get(
            "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", name
        )
        assert policy is not None
        status = policy.get("status", {})
        if status.get("observedGeneration") == policy["metadata"]["generation"]:
            checked: dict[str, Any] = status.get("typeChecking", {})
            return checked
        time.sleep(0.2)
    raise TimeoutError(f"the status controller did not type-check {name} within 60 s")


@pytest.mark.parametrize("cluster", ["lab", "mig"])
def test_the_node_policy_type_checks_against_nodes_without_warnings(
    api_server: Server, cluster: str
) -> None:
    """mig's policy also holds the MIG label keys admitted per pool (a map chosen by the pool's
    node selector)."""
    path = RENDERED / cluster / "cluster" / "validatingadmissionpolicy-gpuconf-node.yaml"
    policy = _load(path, "gpuconf-test-vap-rendered")
    api_server.apply(policy)
    try:
        assert (
            _type_checking(api_server, "gpuconf-test-vap-rendered").get("expressionWarnings", [])
            == []
        )
    finally:
        api_server.delete(policy["apiVersion"], policy["kind"], "", "gpuconf-test-vap-rendered")


def test_a_policy_that_compiles_but_names_a_field_nodes_lack_is_admitted_with_a_warning(
    api_server: Server,
) -> None:
    """Admission cannot know the matched resources' schema, so this is no refusal: the type
    checker finds it afterwards, which is why the previous test wants no warnings."""
    policy = _load(NODE_POLICY, "gpuconf-test-vap-type-error")
    validation = policy["spec"]["validations"][1]
    validation["expression"] = validation["expression"].replace(
        "object.spec ==", "object.spec.gpus ==", 1
    )
    api_server.apply(policy)
    try:
        warnings = _type_checking(api_server, "gpuconf-test-vap-type-error")["expressionWarnings"]
        assert [w["fieldRef"] for w in warnings] == ["spec.validations[1].expression"]
        assert "undefined field 'gpus'" in warnings[0]["warning"]
    finally:
        api_server.delete(policy["apiVersion"], policy["kind"], "", "gpuconf-test-vap-type-error")
