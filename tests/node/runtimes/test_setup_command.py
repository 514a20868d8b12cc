"""`gpuconf node setup` end to end: preview, idempotence, reload, marker, stop, revert, driver wait."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import fake_systemctl
import pytest
from builders import NVIDIA_RUNTIME, RUNTIME_FACTS, HostTree, run_cli, setup_config

import gpuconf.node.runtimes.apply as apply
from gpuconf.node.runtimes.changes import FileChange
from gpuconf.node.runtimes.host import Host
from gpuconf.node.runtimes.systemd import UnitState

DAEMON = "/etc/docker/daemon.json"
BACKUP_OF_DAEMON = "/var/lib/gpuconf/backup/etc/docker/daemon.json"
MARKER = "/run/gpuconf/setup-ready"
MAIN = "/etc/containerd/config.toml"
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"


@pytest.fixture
def host(tmp_path: Path) -> HostTree:
    return HostTree(tmp_path)


def marker(host: HostTree) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in host.read(MARKER).splitlines())


def test_dry_run_prints_the_exact_diff_and_writes_nothing(host: HostTree, tmp_path: Path) -> None:
    host.write(MAIN, (RUNTIME_FACTS / "containerd-1.6-main-systemd.toml").read_text())
    before = host.files()
    preview = host.setup(setup_config("containerd", restart="systemd"), "--dry-run")
    assert preview.code == 0
    assert host.files() == before
    assert preview.out.endswith(
        "dry run: nothing written; would change /etc/containerd/conf.d/99-nvidia.toml, "
        "/etc/containerd/config.toml; then reload containerd by systemd (restart: systemd)\n"
    )
    diff = preview.out.rsplit("dry run:", 1)[0]
    assert "--- /dev/null\n+++ /etc/containerd/conf.d/99-nvidia.toml\n" in diff
    patched = tmp_path / "patched"
    shutil.copytree(host.root, patched, symlinks=True)
    subprocess.run(["patch", "-s", "-p1", "-d", str(patched)], input=diff, text=True, check=True)
    fake_systemctl.install(host)
    host.setup(setup_config("containerd", restart="systemd"))
    for host_path in (MAIN, DROPIN):
        assert (patched / host_path.lstrip("/")).read_text() == host.read(host_path)


def test_a_second_run_changes_nothing_and_restarts_nothing(host: HostTree) -> None:
    fake_systemctl.install(host)
    config = setup_config("containerd", restart="systemd")
    first = host.setup(config)
    written, first_marker = host.files(), marker(host)
    second = host.setup(config)
    assert fake_systemctl.restarts(host) == ["restart --no-block containerd"]
    assert "engine config unchanged; nothing restarted" in second.err
    assert {**host.files(), MARKER: b""} == {**written, MARKER: b""}
    assert first.code == second.code == 0
    assert marker(host) == {**first_marker, "reload": "unchanged"}
    assert first_marker["hash"].startswith("sha256:")
    assert first_marker["reload"] == "systemd"


def test_docker_is_reloaded_by_sighup_to_dockerd_only(host: HostTree) -> None:
    dockerd = subprocess.Popen(["sleep", "60"])
    shim = subprocess.Popen(["sleep", "60"])
    try:
        for process, name in ((dockerd, "dockerd"), (shim, "containerd-shim")):
            (host.proc / str(process.pid)).mkdir()
            (host.proc / str(process.pid) / "comm").write_text(name + "\n")
        result = host.setup(setup_config("docker", restart="auto"))
        assert result.code == 0
        assert dockerd.wait(timeout=10) == -signal.SIGHUP
        assert shim.poll() is None
        assert f"sent SIGHUP to dockerd (pid {dockerd.pid})" in result.err
    finally:
        for process in (dockerd, shim):
            process.kill()
            process.wait()


@pytest.mark.parametrize("engine", ["docker", "containerd"])
def test_only_the_host_s_own_daemon_is_signalled_not_one_inside_a_container(
    host: HostTree, engine: str
) -> None:
    # With hostPID setup sees every process on the node, Docker-in-Docker and kind's containerd
    # too; containerd does not handle SIGHUP, so signalling a nested one kills it.
    name = {"docker": "dockerd", "containerd": "containerd"}[engine]
    daemon = subprocess.Popen(["sleep", "60"])
    nested = subprocess.Popen(["sleep", "60"])
    try:
        (host.proc / "1" / "ns").mkdir(parents=True)
        (host.proc / "1" / "ns" / "pid").symlink_to("pid:[4026531836]")
        for process, namespace in ((daemon, "pid:[4026531836]"), (nested, "pid:[4026532999]")):
            (host.proc / str(process.pid) / "ns").mkdir(parents=True)
            (host.proc / str(process.pid) / "comm").write_text(name + "\n")
            (host.proc / str(process.pid) / "ns" / "pid").symlink_to(namespace)
        result = host.setup(setup_config(engine, restart="signal"))
        assert result.code == 0, result.err
        assert daemon.wait(timeout=10) == -signal.SIGHUP
        assert nested.poll() is None
        assert f"sent SIGHUP to {name} (pid {daemon.pid})" in result.err
    finally:
        for process in (daemon, nested):
            process.kill()
            process.wait()


def _listen_at(host: HostTree, host_path: str) -> socket.socket:
    """A Unix socket listening at ``host_path`` (bound through its folder's descriptor: a
    test's temporary path can exceed sun_path's 108 bytes)."""
    path = host.at(host_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(f"/proc/self/fd/{folder}/{path.name}")
        listener.listen()
        return listener
    finally:
        os.close(folder)


@pytest.mark.parametrize(
    ("engine", "socket_path"),
    [("docker", "/var/run/docker.sock"), ("containerd", "/run/containerd/containerd.sock")],
)
def test_a_daemon_that_answers_but_is_not_visible_fails_the_signal_reload_keeping_it_owed(
    host: HostTree, engine: str, socket_path: str
) -> None:
    # A setup pod without hostPID sees none of the host's processes.
    with _listen_at(host, socket_path):
        result = host.setup(setup_config(engine, restart="signal"))
    assert result.code == 1, result.err
    assert f"answers on {socket_path} but is not among the processes in {host.proc}" in result.err
    assert "hostPID: true" in result.err
    assert host.at("/run/gpuconf/reload-owed").exists()
    assert not host.at(MARKER).exists()


def test_a_stale_socket_of_a_daemon_that_died_is_not_running(host: HostTree) -> None:
    _listen_at(host, "/var/run/docker.sock").close()  # the file stays; nothing listens
    result = host.setup(setup_config("docker", restart="signal"))
    assert result.code == 0, result.err
    assert "dockerd is not running; it reads the new config when it starts" in result.err
    assert not host.at("/run/gpuconf/reload-owed").exists()


@pytest.mark.parametrize(
    ("program", "config", "command"),
    [
        ("containerd", setup_config("containerd"), "containerd --version"),
        (
            "systemctl",
            setup_config("containerd", restart="systemd"),
            "systemctl restart --no-block containerd",
        ),
        ("nvidia-ctk", setup_config("docker", "cdi"), "nvidia-ctk cdi generate"),
    ],
    ids=["version", "restart", "cdi"],
)
def test_a_host_command_that_hangs_is_a_message_naming_it_not_an_internal_error(
    host: HostTree,
    monkeypatch: pytest.MonkeyPatch,
    program: str,
    config: dict[str, object],
    command: str,
) -> None:
    monkeypatch.setattr("gpuconf.node.runtimes.host.COMMAND_TIMEOUT_SECONDS", 0.5)
    host.program(program, "exec sleep 30")
    result = host.setup(config)
    assert result.code == 1, result.err
    assert f"`{command}" in result.err
    assert "did not finish within 0.5 s" in result.err
    assert not host.at(MARKER).exists()


def test_a_failed_restart_leaves_no_ready_marker(host: HostTree) -> None:
    host.program("systemctl", "echo 'Unit containerd.service not found.' >&2; exit 5")
    result = host.setup(setup_config("containerd", restart="systemd"))
    assert result.code == 1
    assert (
        "systemctl restart --no-block containerd failed (exit 5): Unit containerd.service not found."
        in result.err
    )
    assert not host.at(MARKER).exists()


def test_a_restart_that_failed_is_done_by_the_next_run_though_the_files_are_written(
    host: HostTree,
) -> None:
    units = fake_systemctl.install(host)
    (units / "restart-refused").touch()
    config = setup_config("containerd", restart="systemd")
    assert host.setup(config).code == 1
    assert host.at(DROPIN).exists()  # written before the restart failed
    preview = host.setup(config, "--dry-run")
    assert "an earlier run did not reload it: would reload containerd by systemd" in preview.out
    fake = host.folder / "fake-nvml.yaml"
    fake.write_text("gpus: []\n")
    check = run_cli(
        "node", "check", "--config", str(host.config_file(config)), "--node-name", "n1",
        "--nvml", f"fake:{fake}", "--runtime-url", "http://127.0.0.1:9", "--root", str(host.root),
        "--host-commands", "direct",
    )  # fmt: skip
    assert check.code == 1
    assert "host runtime (containerd): configured, not loaded" in check.out
    (units / "restart-refused").unlink()
    retried = host.setup(config)
    assert retried.code == 0, retried.err
    assert fake_systemctl.restarts(host) == ["restart --no-block containerd"] * 2
    assert marker(host)["reload"] == "systemd"
    settled = host.setup(config)
    assert settled.code == 0, settled.err
    assert len(fake_systemctl.restarts(host)) == 2
    assert marker(host)["reload"] == "unchanged"


@pytest.fixture
def quick_restart_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpuconf.node.runtimes.systemd.RESTART_TIMEOUT_SECONDS", 1.0)
    monkeypatch.setattr("gpuconf.node.runtimes.systemd.POLL_SECONDS", 0.05)


@pytest.mark.usefixtures("quick_restart_wait")
def test_a_slow_restart_is_waited_for_by_later_runs_never_restarted_again(host: HostTree) -> None:
    units = fake_systemctl.install(host)
    (units / "containerd.slow").touch()  # k3s-like: TimeoutStartSec=0, systemd never gives up
    config = setup_config("containerd", restart="systemd")
    first = host.setup(config)
    assert first.code == 1, first.err
    assert "containerd is still activating (start) 1 s after its restart was queued" in first.err
    assert host.at("/run/gpuconf/reload-owed").exists()
    second = host.setup(config)  # the restart is still under way
    assert second.code == 1, second.err
    assert not host.at(MARKER).exists()
    (units / "containerd.slow").unlink()  # it comes up
    third = host.setup(config)
    assert third.code == 0, third.err
    assert fake_systemctl.restarts(host) == ["restart --no-block containerd"]
    assert "not restarted" in third.err
    assert not host.at("/run/gpuconf/reload-owed").exists()
    assert marker(host)["reload"] == "systemd"


@pytest.mark.usefixtures("quick_restart_wait")
def test_a_unit_that_came_up_after_the_owed_config_was_written_is_not_restarted_again(
    host: HostTree,
) -> None:
    units = fake_systemctl.install(host)
    (units / "containerd.slow").touch()
    config = setup_config("containerd", restart="systemd")
    assert host.setup(config).code == 1
    (units / "containerd.slow").unlink()
    fake_systemctl.show(host, "containerd")  # systemd finished the job between two runs
    settled = host.setup(config)
    assert settled.code == 0, settled.err
    assert "containerd came up after the config was written; not restarted again" in settled.err
    assert fake_systemctl.restarts(host) == ["restart --no-block containerd"]


@pytest.mark.usefixtures("quick_restart_wait")
def test_a_unit_that_fails_to_come_back_is_a_message_naming_its_result(host: HostTree) -> None:
    units = fake_systemctl.install(host)
    (units / "containerd.fails").touch()
    result = host.setup(setup_config("containerd", restart="systemd"))
    assert result.code == 1, result.err
    assert (
        "containerd did not come back after its restart: failed (result exit-code); "
        "see `journalctl -u containerd` on the host"
    ) in result.err
    assert not host.at(MARKER).exists()


def test_a_restarting_unit_whose_start_fails_is_a_message_at_once_not_after_the_timeout(
    host: HostTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # containerd/containerd containerd.service: Restart=always, RestartSec=5 (docker's and
    # k3s's units too): a refused config shows as activating/auto-restart, never failed.
    monkeypatch.setattr("gpuconf.node.runtimes.systemd.RESTART_TIMEOUT_SECONDS", 30.0)
    monkeypatch.setattr("gpuconf.node.runtimes.systemd.POLL_SECONDS", 0.05)
    units = fake_systemctl.install(host)
    (units / "containerd.fails").touch()
    (units / "containerd.restarts").touch()
    result = host.setup(setup_config("containerd", restart="systemd"))
    assert result.code == 1, result.err
    # Not the timeout's message ("still activating ... after its restart was queued").
    assert (
        "containerd did not come back after its restart: auto-restart (result exit-code, "
        "systemd retries it); see `journalctl -u containerd` on the host"
    ) in result.err
    assert not host.at(MARKER).exists()


@pytest.mark.parametrize("sub_state", ["auto-restart", "auto-restart-queued"])
def test_an_auto_restart_left_from_before_the_restart_is_not_taken_for_its_failure(
    sub_state: str,
) -> None:
    queued = 100.0
    before = UnitState("activating", sub_state, "exit-code", 0.0, 90.0, 90.0)
    assert not before.start_failed_after(queued)
    assert UnitState("activating", sub_state, "exit-code", 0.0, 101.0, 101.0).start_failed_after(
        queued
    )
    # systemd < 254 leaves the timestamps at the restart's stop and start
    assert UnitState("activating", sub_state, "exit-code", 0.0, 101.0, 90.0).start_failed_after(
        queued
    )


@pytest.mark.parametrize(
    "sub_state", ["stop", "stop-sigterm", "stop-post", "dead", "start-pre", "start", "start-post"]
)
def test_a_restart_s_own_stop_and_start_are_not_a_failure(sub_state: str) -> None:
    active = {"dead": "inactive", "start": "activating"}.get(
        sub_state.split("-")[0], "deactivating"
    )
    state = UnitState(active, sub_state, "success", 0.0, 101.0, 101.0)
    assert not state.start_failed_after(100.0)


def start_setup(host: HostTree, config: dict[str, object]) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "gpuconf", *host.setup_argv(config)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop(process: subprocess.Popen[str]) -> str:
    """SIGTERM, as the kubelet sends it; returns what setup logged. Fails unless it exits 0."""
    process.send_signal(signal.SIGTERM)
    _, log = process.communicate(timeout=30)
    assert process.returncode == 0, log
    return log


def setup_ready(host: HostTree, config: dict[str, object]) -> subprocess.Popen[str]:
    """Setup started, once it has written its ready marker."""
    process = start_setup(host, config)
    wait_for(host.at(MARKER))
    return process


def kill_setup(host: HostTree, process: subprocess.Popen[str]) -> None:
    """SIGKILL (a grace period run out, a node crash): no tear-down. Its marker goes, so that a
    next setup's own can be waited for."""
    process.kill()
    process.communicate(timeout=30)
    host.at(MARKER).unlink()


def with_debug(host: HostTree) -> str:
    """The admin's edit of daemon.json: debug on, beside what is there."""
    edited = host.read(DAEMON).replace('"log-level"', '"debug": true,\n  "log-level"')
    host.write(DAEMON, edited)
    return edited


def wait_for(path: Path, present: bool = True) -> None:
    deadline = time.monotonic() + 30
    while path.exists() != present:
        assert time.monotonic() < deadline, f"{path} {'never appeared' if present else 'stayed'}"
        time.sleep(0.05)


def test_sigterm_removes_the_marker_and_keeps_the_config(host: HostTree) -> None:
    host.write(DAEMON, '{"log-level": "warn"}')
    process = setup_ready(host, setup_config("docker"))
    assert "ready marker removed" in stop(process)
    assert not host.at(MARKER).exists()
    assert json.loads(host.read(DAEMON))["default-runtime"] == "nvidia"


def test_setup_s_metrics_port_says_it_is_ready_and_what_it_changed(host: HostTree) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "gpuconf", *host.setup_argv(setup_config("docker"))]
    process = subprocess.Popen(
        [*argv, "--metrics-port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for(host.at(MARKER))
        deadline = time.monotonic() + 10
        text = ""
        while "gpuconf_setup_ready 1.0\n" not in text:  # set just after the marker is written
            assert time.monotonic() < deadline, text
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                text = reply.read().decode()
            time.sleep(0.02)
    finally:
        stop(process)
    assert re.search(r"^gpuconf_setup_changed_files [1-9][0-9]*\.0$", text, re.MULTILINE)
    assert 'gpuconf_setup_engine_reloads_total{engine="docker",mode="none"} 1.0\n' in text


def test_a_metrics_port_in_use_is_a_message_and_exit_1_with_nothing_written(
    host: HostTree,
) -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = host.setup(setup_config("docker"), "--once", f"--metrics-port={port}")
    assert result.code == 1, result.err
    assert f"cannot serve metrics on port {port}: Address already in use" in result.err
    assert not host.at(MARKER).exists()


@pytest.mark.parametrize("command", ["setup --dry-run", "setup --once", "check"])
def test_a_root_that_is_not_a_folder_is_named_not_taken_for_a_host_without_the_toolkit(
    tmp_path: Path, command: str
) -> None:
    config = HostTree(tmp_path).config_file(setup_config("docker"))
    fake = tmp_path / "fake-nvml.yaml"
    fake.write_text("gpus: []\n")
    action, *flags = command.split()
    if action == "setup":
        flags += ["--host-commands", "direct", "--proc", str(tmp_path / "proc")]
    else:
        flags += [
            "--node-name",
            "n1",
            "--nvml",
            f"fake:{fake}",
            "--runtime-url",
            "http://127.0.0.1:9",
        ]
    missing = tmp_path / "no-such-host"
    result = run_cli("node", action, "--config", str(config), "--root", str(missing), *flags)
    assert result.code == 1, result.err
    assert f"the host root {missing} is not a folder" in result.out + result.err
    assert "install the NVIDIA container toolkit" not in result.out + result.err


def test_revert_on_stop_puts_back_the_first_originals(host: HostTree) -> None:
    original = (RUNTIME_FACTS / "containerd-1.6-main-systemd.toml").read_bytes()
    host.write(MAIN, original)
    host.write("/etc/nvidia-container-runtime/config.toml", "disable-require = false\n")
    process = setup_ready(
        host, setup_config("containerd", device_list_strategy="volume-mounts", revertOnStop=True)
    )
    assert host.at(DROPIN).exists()
    assert "reverted" in stop(process)
    assert host.at(MAIN).read_bytes() == original
    assert not host.at(DROPIN).exists()
    assert host.read("/etc/nvidia-container-runtime/config.toml") == "disable-require = false\n"


def test_a_host_edit_made_between_a_revert_and_the_next_setup_survives_the_next_revert(
    host: HostTree,
) -> None:
    config = setup_config("docker", revertOnStop=True)
    host.write(DAEMON, '{"log-level": "warn"}\n')
    assert "reverted" in stop(setup_ready(host, config))
    edited = '{"log-level": "warn", "registry-mirrors": ["https://mirror.example"]}\n'
    host.write(DAEMON, edited)  # the admin's change while gpuconf is not set up
    second = setup_ready(host, config)
    assert "registry-mirrors" in host.read(DAEMON)
    assert "reverted" in stop(second)
    assert host.read(DAEMON) == edited


def test_a_file_changed_on_the_host_after_setup_wrote_it_is_not_reverted_over(
    host: HostTree,
) -> None:
    host.write(DAEMON, '{"log-level": "warn"}\n')
    process = setup_ready(host, setup_config("docker", revertOnStop=True))
    edited = with_debug(host)  # the admin's change while setup runs
    log = stop(process)
    assert host.read(DAEMON) == edited
    assert "changed on the host since setup wrote it" in log
    assert host.at("/var/lib/gpuconf/backup/etc/docker/daemon.json").read_text() == (
        '{"log-level": "warn"}\n'
    )


def test_a_host_edit_left_at_one_stop_survives_the_next_setup_and_stop(host: HostTree) -> None:
    config = setup_config("docker", revertOnStop=True)
    host.write(DAEMON, '{"log-level": "warn"}\n')
    first = setup_ready(host, config)
    edited = with_debug(host)
    assert "changed on the host since setup wrote it" in stop(first)
    stop(setup_ready(host, config))  # finds the file configured: writes nothing
    assert host.read(DAEMON) == edited


def test_a_host_edit_made_before_setup_was_killed_survives_the_next_setup_s_revert(
    host: HostTree,
) -> None:
    config = setup_config("docker", revertOnStop=True)
    host.write(DAEMON, '{"log-level": "warn"}\n')
    first = setup_ready(host, config)
    edited = with_debug(host)
    kill_setup(host, first)  # the original stays kept
    stop(setup_ready(host, config))
    assert host.read(DAEMON) == edited


def test_a_file_setup_rewrites_after_a_host_edit_reverts_to_that_edit(host: HostTree) -> None:
    config = setup_config("docker", revertOnStop=True)
    host.write(DAEMON, '{"log-level": "warn"}\n')
    kill_setup(host, setup_ready(host, config))
    edited = '{"log-level": "debug"}\n'  # the admin starts over; gpuconf's runtime is gone
    host.write(DAEMON, edited)
    second = setup_ready(host, config)
    assert "nvidia" in host.read(DAEMON)
    assert "reverted" in stop(second)
    assert host.read(DAEMON) == edited


def test_a_consumer_waiting_for_the_marker_says_what_it_waits_for_while_it_waits(
    tmp_path: Path,
) -> None:
    # docs/operations.md: `kubectl logs <pod> -c wait-for-setup` is where an operator looks
    # when a pod is stuck in Init.
    marker_file = tmp_path / "setup-ready"
    argv = [sys.executable, "-m", "gpuconf", "node", "wait", str(marker_file), "--interval", "0.05"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    setup_done = threading.Timer(3, marker_file.touch)
    setup_done.start()
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == f"waiting for: {marker_file}\n"
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == f"ready: {marker_file}\n"
    finally:
        setup_done.cancel()
        process.kill()
        process.communicate()


def test_setup_waits_for_the_containerised_driver_s_marker(host: HostTree) -> None:
    config = setup_config("docker", driverRoot="/run/nvidia/driver")
    timer = threading.Timer(0.3, lambda: host.write("/run/nvidia/validations/driver-ready", ""))
    timer.start()
    result = host.setup(config)
    timer.join()
    assert result.code == 0
    assert "waiting for the NVIDIA driver" in result.err
    assert host.at(MARKER).exists()


def test_on_a_jetson_setup_waits_for_l4t_not_for_proc_driver_nvidia(host: HostTree) -> None:
    (host.proc / "driver" / "nvidia" / "version").unlink()
    config = setup_config("docker") | {"platform": "tegra"}
    waited = host.setup(config, "--once", "--driver-timeout", "0.2")
    assert waited.code == 1
    assert "etc/nv_tegra_release is missing" in waited.err
    host.write("/etc/nv_tegra_release", "# R36 (release), REVISION: 4.3\n")
    assert host.setup(config).code == 0
    assert host.at(MARKER).exists()


def test_without_a_driver_setup_writes_nothing_and_says_what_it_waited_for(host: HostTree) -> None:
    (host.proc / "driver" / "nvidia" / "version").unlink()
    result = host.setup(setup_config("docker"), "--once", "--driver-timeout", "0.2")
    assert result.code == 1
    assert "the NVIDIA driver is not ready after 0.2s" in result.err
    assert host.files() == {}


def test_a_host_without_the_toolkit_is_told_to_install_it(host: HostTree) -> None:
    host.at(NVIDIA_RUNTIME).unlink()
    result = host.setup(setup_config("docker"))
    assert result.code == 1
    assert (
        f"{NVIDIA_RUNTIME} is not on the host: install the NVIDIA container toolkit" in result.err
    )


class _Killed(BaseException):
    """Setup killed (SIGKILL, the node lost power) at this point: nothing after it runs."""


def _write(host: HostTree, data: bytes) -> list[str]:
    path = host.at(DAEMON)
    old = path.read_bytes() if path.exists() else None
    return apply.write_changes(Host(host.root), [FileChange(DAEMON, path, old, data)])


def _revert(host: HostTree) -> list[str]:
    path = host.at(DAEMON)
    return apply.revert(
        Host(host.root), [FileChange(DAEMON, path, path.read_bytes(), b"")]
    ).put_back


def _kill_setup_at(
    monkeypatch: pytest.MonkeyPatch, host: HostTree, name: str, new: bytes, written: bool
) -> None:
    """Kill setup as apply.py calls ``name`` while the daemon.json holds ``new`` (``written``)
    or not yet."""
    real = getattr(apply, name)

    def dying(*args: object, **kwargs: object) -> object:
        if (host.at(DAEMON).read_bytes() == new) == written:
            raise _Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(apply, name, dying)


@pytest.mark.parametrize(
    ("name", "written"),
    [("record_written", True), ("write_atomically", False)],
    ids=["after-the-file-write", "before-the-file-write"],
)
def test_a_run_killed_while_it_rewrites_a_file_keeps_the_first_original_for_revert(
    host: HostTree, monkeypatch: pytest.MonkeyPatch, name: str, written: bool
) -> None:
    original, first, second = b'{"log-level": "warn"}\n', b'{"a": 1}\n', b'{"b": 2}\n'
    host.write(DAEMON, original)
    assert _write(host, first) == [DAEMON]  # run 1 keeps the original
    with monkeypatch.context() as patch:
        _kill_setup_at(patch, host, name, second, written)
        with pytest.raises(_Killed):
            _write(host, second)  # run 2: its config changed; killed mid-write
    _write(host, second)  # run 3, same config as run 2
    assert host.at(BACKUP_OF_DAEMON).read_bytes() == original
    assert _revert(host) == [DAEMON]
    assert host.at(DAEMON).read_bytes() == original
