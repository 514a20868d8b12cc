"""plan/pod_security.py: a site may not lower the Pod Security gpuconf's namespace needs, read as
k8s.io/pod-security-admission v0.34.4 reads its labels (api/helpers.go, admission/admission.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builders import REPO, cluster_file, dump, load_yaml, run_cli, site_block

from gpuconf.compiler.plan.pod_security import (
    AUDIT,
    ENFORCE,
    POD_SECURITY_PRIVILEGED,
    POD_SECURITY_READERS,
    WARN,
)
from gpuconf.compiler.resolve.metadata_guard import refusals

OWN = "namespaces/gpuconf-system.yaml"


def _admitted(key: str, value: Any, written: dict[str, str] = POD_SECURITY_PRIVILEGED) -> bool:
    return not any(refusals(written, {key: value}, POD_SECURITY_READERS))


def test_every_label_pod_security_admission_reads_is_guarded() -> None:
    # api/constants.go: a level and a version label per mode.
    modes = ("enforce", "audit", "warn")
    read = {f"pod-security.kubernetes.io/{m}{s}" for m in modes for s in ("", "-version")}
    assert read == POD_SECURITY_READERS.keys()
    assert POD_SECURITY_PRIVILEGED.keys() == {ENFORCE, AUDIT, WARN}


# ParseLevel is case-sensitive and reads anything but its three levels as restricted; only
# privileged admits the runtime setup and driver installer (policy/registry.go checks nothing).
@pytest.mark.parametrize(
    ("value", "admitted"),
    [
        ("privileged", True),
        ("baseline", False),
        ("restricted", False),
        ("Privileged", False),
        ("", False),
        (True, False),
    ],
)
def test_only_privileged_is_enforced_on_gpuconf_s_namespace(value: Any, admitted: bool) -> None:
    assert _admitted(ENFORCE, value) is admitted


# audit and warn never refuse a pod (EvaluatePod): any level a site likes; an unparsable one
# makes ValidateNamespace refuse the Namespace itself.
@pytest.mark.parametrize("mode", [AUDIT, WARN])
@pytest.mark.parametrize(
    ("value", "admitted"),
    [("privileged", True), ("baseline", True), ("restricted", True), ("strict", False)],
)
def test_audit_and_warn_may_be_any_level_pod_security_parses(
    mode: str, value: str, admitted: bool
) -> None:
    assert _admitted(mode, value) is admitted


# ParseVersion: "latest" or ^v1\.([0-9]|[1-9][0-9]*)$, the minor read by strconv.Atoi.
@pytest.mark.parametrize("mode", [ENFORCE, AUDIT, WARN])
@pytest.mark.parametrize(
    ("value", "admitted"),
    [
        ("latest", True),
        ("v1.0", True),
        ("v1.34", True),
        ("v1.9223372036854775807", True),
        ("v1.9223372036854775808", False),
        ("v1.034", False),
        ("v2.1", False),
        ("1.34", False),
        ("Latest", False),
    ],
)
def test_a_version_label_is_refused_only_where_pod_security_cannot_parse_it(
    mode: str, value: str, admitted: bool
) -> None:
    assert _admitted(f"{mode}-version", value) is admitted


# Elsewhere gpuconf writes no Pod Security label, and any level or version admission parses is
# a site's (enforce: restricted on a tenant namespace); one it cannot parse makes ValidateNamespace
# refuse to create the Namespace (tests/control_plane/test_pod_security_labels.py asks the server).
@pytest.mark.parametrize(
    ("key", "value", "admitted"),
    [
        (ENFORCE, "restricted", True),
        (ENFORCE, "baseline", True),
        (ENFORCE, "v9", False),
        (AUDIT, "Restricted", False),
        (WARN, "", False),
        (f"{ENFORCE}-version", "v1.34", True),
        (f"{ENFORCE}-version", "restricted", False),
        (f"{WARN}-version", "v9", False),
    ],
)
@pytest.mark.parametrize(
    "written", [{"app.kubernetes.io/managed-by": "gpuconf"}, {}], ids=["tenant", "bare"]
)
def test_elsewhere_a_pod_security_label_is_refused_only_where_admission_cannot_parse_it(
    key: str, value: str, admitted: bool, written: dict[str, str]
) -> None:
    assert _admitted(key, value, written) is admitted


def test_a_site_block_lowering_enforce_is_refused_at_its_line_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    site_block(site, "namespace.yaml.j2", "extra_labels", f"team: gpu\n{ENFORCE}: baseline")
    out = tmp_path / "out"
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(site), "-o", str(out), cwd=REPO
    )
    assert result.code == 1
    assert f"{site.as_posix()}/namespace.yaml.j2:4:1: " in result.err
    assert (
        f"the block changes the label {ENFORCE}: 'privileged' gpuconf writes to 'baseline': Pod "
        "Security admission would admit there only pods that meet baseline"
    ) in result.err
    assert "(admission.go, ValidatePod)" in result.err
    assert not out.exists()


def test_a_refused_label_is_named_at_its_own_line_and_its_value_as_yaml_spells_it(
    tmp_path: Path,
) -> None:
    """The line setting the key itself, not an earlier one holding it in a longer key; `true`
    as the block wrote it, not Python's True."""
    site = tmp_path / "site"
    site.mkdir()
    block = f"team: gpu\n{ENFORCE}-version: latest\n{ENFORCE}: true"
    site_block(site, "namespace.yaml.j2", "extra_labels", block)
    result = run_cli("render", "clusters/lab.yaml", "--templates", str(site), "--check", cwd=REPO)
    assert result.code == 1
    assert f"{site.as_posix()}/namespace.yaml.j2:5:1: " in result.err, result.err
    assert f"{ENFORCE}: 'privileged' gpuconf writes to true" in result.err


def test_a_site_block_may_make_audit_and_warn_stricter_and_enforce_on_tenant_namespaces(
    tmp_path: Path,
) -> None:
    site_block(
        tmp_path,
        "namespace.yaml.j2",
        "extra_labels",
        f"{AUDIT}: restricted\n{WARN}: baseline\n{ENFORCE}-version: v1.34\n"
        f'{{% if meta["name"] != "gpuconf-system" %}}{ENFORCE}: restricted{{% endif %}}',
    )
    out = tmp_path / "out"
    result = run_cli(
        "render", "clusters/lab.yaml", "--templates", str(tmp_path), "-o", str(out), cwd=REPO
    )
    assert result.code == 0, result.err
    own = load_yaml((out / "lab" / OWN).read_bytes())["metadata"]["labels"]
    assert (own[ENFORCE], own[AUDIT], own[WARN]) == ("privileged", "restricted", "baseline")
    tenant = load_yaml((out / "lab" / "namespaces/research.yaml").read_bytes())
    assert tenant["metadata"]["labels"][ENFORCE] == "restricted"


def test_gpuconf_s_former_namespace_with_a_stricter_audit_is_still_known_as_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "site").mkdir()
    site_block(tmp_path / "site", "namespace.yaml.j2", "extra_labels", f"{AUDIT}: restricted")
    (tmp_path / "clusters").mkdir()
    lab = cluster_file("lab")
    lab["spec"]["templates"] = "../site"
    for namespace in ("gpuconf-system", "gpu-system"):
        lab["spec"]["namespace"] = namespace
        (tmp_path / "clusters" / "lab.yaml").write_text(dump(lab))
        result = run_cli("render", cwd=tmp_path)
        assert result.code == 0, result.err
    kept = (tmp_path / "rendered" / "lab" / OWN).read_bytes()
    assert (
        "its own until spec.namespace changed"
        in load_yaml(kept)["metadata"]["annotations"]["gpuconf.dev/kept"]
    )
