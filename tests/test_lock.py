"""The lock: what every environment installs, pinned with hashes, agreeing with pyproject.toml."""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from typing import NamedTuple

import pytest
from builders import REPO
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# Interpreters and machines the lock is for (requirements/README.md).
TARGETS = [
    {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux",
     "platform_system": "Linux", "platform_machine": machine,
     "platform_python_implementation": "CPython", "implementation_name": "cpython"}
    for python in ("3.11", "3.12", "3.13")
    for machine in ("x86_64", "aarch64")
]  # fmt: skip
ALWAYS_THERE = {"pip", "setuptools", "wheel", "gpuconf"}


class Pin(NamedTuple):
    version: Version
    marker: Marker | None
    hashes: frozenset[str]


def _read_lock(name: str) -> dict[str, Pin]:
    text = (REPO / "requirements" / name).read_text()
    pins: dict[str, Pin] = {}
    for entry in re.split(r"\n(?=\S)", text):
        if entry.startswith("#") or not entry.strip():
            continue
        head = entry.split("\\", 1)[0].strip()
        found = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)(?: ; (.+))?", head)
        assert found, f"{name}: not an exact pin: {head!r}"
        hashes = frozenset(re.findall(r"--hash=(sha256:[0-9a-f]{64})", entry))
        assert hashes, f"{name}: {head} has no hash"
        marker = Marker(found[3]) if found[3] else None
        pins[canonicalize_name(found[1])] = Pin(Version(found[2]), marker, hashes)
    return pins


TEST_LOCK = _read_lock("test.lock")
RUNTIME_LOCK = _read_lock("runtime.lock")


def test_the_runtime_lock_is_part_of_the_whole_lock_with_the_same_pins_and_hashes() -> None:
    for name, pin in RUNTIME_LOCK.items():
        assert TEST_LOCK.get(name) == pin, name


def _requirements(groups: list[str]) -> list[Requirement]:
    return [Requirement(text) for text in groups]


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        pytest.param(RUNTIME_LOCK, PYPROJECT["project"]["dependencies"], id="runtime"),
        pytest.param(RUNTIME_LOCK, PYPROJECT["build-system"]["requires"], id="build"),
        pytest.param(
            TEST_LOCK, PYPROJECT["project"]["optional-dependencies"]["test"], id="test-extra"
        ),
    ],
)
def test_every_declared_requirement_is_pinned_within_its_range(
    lock: dict[str, Pin], requirements: list[str]
) -> None:
    for requirement in _requirements(requirements):
        pin = lock.get(canonicalize_name(requirement.name))
        assert pin is not None, f"{requirement} is not in the lock: run `make lock`"
        assert requirement.specifier.contains(pin.version, prereleases=True), (
            f"{requirement} but the lock pins {pin.version}: run `make lock`"
        )


@pytest.mark.parametrize(
    "target", TARGETS, ids=lambda t: f"{t['python_version']}-{t['platform_machine']}"
)
def test_every_dependency_of_a_locked_package_is_locked_too(target: dict[str, str]) -> None:
    """What pip installs with --no-deps must still be whole on each interpreter and machine."""
    for name, pin in TEST_LOCK.items():
        if pin.marker is not None and not pin.marker.evaluate(target):
            continue
        for text in metadata_requirements(name, pin.version):
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate(
                {**target, "extra": ""}
            ):
                continue
            assert canonicalize_name(requirement.name) in TEST_LOCK, (name, text)


def metadata_requirements(name: str, version: Version) -> list[str]:
    """The requirements of an installed distribution of that version, else none to check."""
    try:
        distribution = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return []
    if Version(distribution.version) != version:
        return []
    return distribution.requires or []


@pytest.mark.skipif(
    os.environ.get("GPUCONF_UNLOCKED") == "1", reason="make test-latest runs without the lock"
)
def test_the_environment_running_the_suite_holds_exactly_the_lock() -> None:
    installed = {
        canonicalize_name(d.metadata["Name"]): Version(d.version) for d in metadata.distributions()
    }
    unlocked = {
        name: str(version)
        for name, version in installed.items()
        if name not in ALWAYS_THERE and name not in TEST_LOCK
    }
    assert not unlocked, f"installed but not in requirements/test.lock: {unlocked}"
    moved = {
        name: (str(version), str(TEST_LOCK[name].version))
        for name, version in installed.items()
        if name in TEST_LOCK and TEST_LOCK[name].version != version
    }
    assert not moved, f"installed versions that differ from the lock: {moved}"


def test_every_install_in_the_makefile_and_containerfile_is_from_the_lock() -> None:
    """Outside the test-latest canary, pip installs only hash-checked pins or gpuconf itself."""
    makefile = (REPO / "Makefile").read_text()
    canary = re.search(r"^test-latest:\n(?:\t.*\n|.*\\\n)+", makefile, re.MULTILINE)
    assert canary is not None
    locked = makefile.replace(canary[0], "")
    lines = [*locked.splitlines(), *(REPO / "Containerfile").read_text().splitlines()]
    installs = [
        line for line in lines if re.search(r"\bpip\b.*\binstall\b|\$\(PIP\) install", line)
    ]
    assert installs
    for line in installs:
        assert "--no-deps" in line, line
        assert "--require-hashes" in line or "--no-build-isolation" in line, line
