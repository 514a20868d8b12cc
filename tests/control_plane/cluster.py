"""A real Kubernetes control plane on loopback for the tests: etcd, kube-apiserver and
kube-controller-manager, built from the Go modules pinned in this folder's go.mod.

    python tests/control_plane/cluster.py up [--dir .cluster]     start (idempotent), print the kubeconfig
    python tests/control_plane/cluster.py down [--dir .cluster]   stop what `up` started, by PID
    python tests/control_plane/cluster.py build                   build the binaries only

The binaries are built once per machine into ${XDG_CACHE_HOME:-~/.cache}/gpuconf/control-plane/
<key>/bin, the key naming the pinned versions (and a digest of the Go sources here), so a new
build happens only when they change. Certificates and the service-account key are made fresh
for each start; everything listens on 127.0.0.1 only."""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import glob
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_DIR = REPO / ".cluster"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager")
PACKAGES = (
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "./etcd",
    "./certs",
)
# Beta DRA versions are off by default in 1.34 (v1 is GA; betaAPIGroupVersionsDisabledByDefault
# in k8s.io/kubernetes pkg/controlplane/instance.go); clusters that declare 1.32 or 1.33 render
# resource.k8s.io/v1beta1 or v1beta2, and the server must serve them to admit those.
RUNTIME_CONFIG = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
# What the tests need from the controllers (names as in cmd/kube-controller-manager/names):
# namespaces emptied, owned objects collected, PodDisruptionBudgets' status for eviction,
# service accounts and their tokens, ValidatingAdmissionPolicies' type checking, and
# ResourceQuotas' usage (what `gpuconf status` reads as "in use").
CONTROLLERS = ",".join(
    f"{name}-controller"
    for name in (
        "namespace",
        "garbage-collector",
        "disruption",
        "serviceaccount",
        "serviceaccount-token",
        "validatingadmissionpolicy-status",
        "resourcequota",
    )
)
SERVICE_CIDR = "10.0.0.0/24"
READY_TIMEOUT_S = 180.0


class ControlPlaneError(Exception):
    """Why the control plane could not be built or started; the message says what to do."""


# --- building -----------------------------------------------------------------------------------


def pinned_versions() -> tuple[str, str]:
    """(Kubernetes, etcd) versions that go.mod pins."""
    text = (HERE / "go.mod").read_text(encoding="utf-8")
    kubernetes = re.search(r"^(?:require )?\s*k8s\.io/kubernetes (v\S+)", text, re.M)
    etcd = re.search(r"^(?:require )?\s*go\.etcd\.io/etcd/server/v3 (v\S+)", text, re.M)
    if not kubernetes or not etcd:
        raise ControlPlaneError(f"{HERE / 'go.mod'}: pins neither k8s.io/kubernetes nor etcd")
    return kubernetes.group(1), etcd.group(1)


def build_flags() -> list[str]:
    """`go build`'s flags: the version the binaries report (/version, as a release build's)
    and no debug information, which halves linking and the binaries' size."""
    kubernetes, _ = pinned_versions()
    major, minor = kubernetes.lstrip("v").split(".")[:2]
    version = "k8s.io/component-base/version"
    ldflags = [
        "-s",
        "-w",
        f"-X {version}.gitVersion={kubernetes}",
        f"-X {version}.gitMajor={major}",
        f"-X {version}.gitMinor={minor}",
        f"-X {version}.gitTreeState=clean",
    ]
    return ["-trimpath", "-ldflags", " ".join(ldflags)]


def build_key() -> str:
    """The cache folder's name: the pinned versions, and a digest of everything else the
    binaries are made from (go.sum, our Go files, the flags)."""
    kubernetes, etcd = pinned_versions()
    digest = hashlib.sha256("\0".join([*build_flags(), *PACKAGES]).encode())
    for path in sorted([HERE / "go.mod", HERE / "go.sum", *HERE.glob("*/*.go")]):
        digest.update(path.relative_to(HERE).as_posix().encode() + b"\0" + path.read_bytes())
    return f"kubernetes-{kubernetes}-etcd-{etcd}-{digest.hexdigest()[:12]}"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpuconf" / "control-plane"


# With no Go on the machine (CI's clean machines have only Python and make), the toolchain is
# fetched as the go command fetches one for GOTOOLCHAIN: the module golang.org/toolchain from
# the Go module proxy, checked against its go.sum hash (dirhash h1), pinned here per machine.
TOOLCHAINS = {
    "x86_64": ("v0.0.1-go1.24.13.linux-amd64", "h1:5sgfUhn9QCgVl4UYj32GrIYFHI3bi2UX55tNfupXwxc="),
}


def installed_go() -> str | None:
    """The go command this machine has ($GO, on PATH, or where Go's installers put it)."""
    candidates = [os.environ.get("GO", ""), shutil.which("go") or "", "/usr/local/go/bin/go"]
    candidates += sorted(glob.glob("/usr/lib/go-*/bin/go"), reverse=True)
    for candidate in filter(None, candidates):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def go_binary() -> str:
    installed = installed_go()
    if installed is not None:
        return installed
    if platform.machine() not in TOOLCHAINS:
        raise ControlPlaneError(
            "the test control plane is built from Go modules: install Go 1.24 or later "
            "(https://go.dev/dl/ or apt-get install golang-go), or set GO=/path/to/go"
        )
    return str(fetch_toolchain(*TOOLCHAINS[platform.machine()]))


def module_hash(archive: zipfile.ZipFile) -> str:
    """A module zip's go.sum hash (golang.org/x/mod/sumdb/dirhash Hash1)."""
    names = sorted(n for n in archive.namelist() if not n.endswith("/"))
    lines = "".join(f"{hashlib.sha256(archive.read(n)).hexdigest()}  {n}\n" for n in names)
    return "h1:" + base64.b64encode(hashlib.sha256(lines.encode()).digest()).decode()


def fetch_toolchain(version: str, expected: str) -> Path:
    folder = cache_root() / "go" / version
    go = folder / "bin" / "go"
    with locked(folder.parent / f"{version}.lock"):
        if go.is_file():
            return go
        proxy = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0].split("|")[0]
        url = f"{proxy.rstrip('/')}/golang.org/toolchain/@v/{version}.zip"
        print(f"no Go on this machine: fetching {url}")
        with tempfile.TemporaryFile() as download:
            with urllib.request.urlopen(url, timeout=600) as response:
                shutil.copyfileobj(response, download)
            archive = zipfile.ZipFile(download)
            if module_hash(archive) != expected:
                raise ControlPlaneError(f"{url}: not the toolchain pinned ({expected})")
            partial = folder.with_name(f"{version}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            prefix = f"golang.org/toolchain@{version}/"
            for member in archive.infolist():
                if member.is_dir() or not member.filename.startswith(prefix):
                    continue
                relative = member.filename.removeprefix(prefix)
                target = partial / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
                # The zip keeps no modes; the go command marks these executable (toolchain.go).
                if relative.startswith(("bin/", "pkg/tool/")):
                    target.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        return go


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(log: Path | None = None) -> Path:
    """The folder of built binaries, building them first when this version has none yet."""
    folder = cache_root() / build_key()
    binaries = folder / "bin"
    with locked(folder.parent / f"{folder.name}.lock"):
        if all((binaries / name).is_file() for name in (*COMPONENTS, "certs")):
            return binaries
        partial = folder / "bin.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        command = [go_binary(), "build", *build_flags(), "-o", f"{partial}/"]
        print(f"building the test control plane ({folder.name}); the first build takes a while")
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(log.open("ab")) if log else None
            result = subprocess.run(
                [*command, *PACKAGES],
                cwd=HERE,
                env={**os.environ, "GOFLAGS": "-mod=mod"},
                stdout=out,
                stderr=subprocess.STDOUT if out else None,
                check=False,
            )
        if result.returncode != 0:
            tail = log.read_text(errors="replace").splitlines()[-25:] if log else []
            raise ControlPlaneError(
                f"go build failed (exit {result.returncode})\n" + "\n".join(tail)
            )
        shutil.rmtree(binaries, ignore_errors=True)
        partial.rename(binaries)
        print(f"built in {time.monotonic() - started:.0f} s into {binaries}")
        return binaries


# --- starting and stopping ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _pem(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(target: Path, server: str, pki: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gpuconf-test",
                "cluster": {"server": server, "certificate-authority-data": _pem(pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate-data": _pem(pki / "admin.crt"),
                    "client-key-data": _pem(pki / "admin.key"),
                },
            }
        ],
        "contexts": [
            {"name": "gpuconf-test", "context": {"cluster": "gpuconf-test", "user": "admin"}}
        ],
        "current-context": "gpuconf-test",
    }
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    partial.chmod(0o600)
    partial.rename(target)


def _admin_context(pki: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return context


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as error:
        return 0, str(error)


class ControlPlane:
    """One control plane's state folder: its pki, etcd data, logs, kubeconfig and PIDs."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.kubeconfig = self.folder / "kubeconfig"
        self.state_file = self.folder / "state.json"
        self.pki = self.folder / "pki"
        self.logs = self.folder / "logs"
        # The processes this object started, reaped when it stops them (a pytest session
        # that started the control plane also stops it).
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def lock(self) -> contextlib.AbstractContextManager[None]:
        return locked(self.folder / ".lock")

    def _state(self) -> dict[str, object]:
        try:
            state: dict[str, object] = json.loads(self.state_file.read_text(encoding="utf-8"))
            return state
        except (OSError, ValueError):
            return {}

    def _processes(self) -> dict[str, int]:
        processes = self._state().get("processes", {})
        return dict(processes) if isinstance(processes, dict) else {}

    def _alive(self, pid: int) -> bool:
        """Whether pid is still a process started from this control plane's binaries (a PID
        the system gave to another program since is not ours to signal)."""
        if pid in self._children:  # ours: its cmdline is Python's until the exec is done
            return self._children[pid].poll() is None
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            return False
        return str(self._state().get("bin", "\0")) in command

    def _ended(self, pid: int, timeout_s: float) -> bool:
        """Wait until pid has exited and, unless this object started it (and reaps it), has
        been reaped by its parent, so that nothing of it is left in the process table."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            exited = not self._alive(pid)
            if exited and (pid in self._children or not Path(f"/proc/{pid}").exists()):
                return True
            time.sleep(0.1)
        return not self._alive(pid)

    def ready(self) -> bool:
        processes = self._processes()
        if not processes or not all(self._alive(pid) for pid in processes.values()):
            return False
        status, body = _get(f"{self._state()['server']}/readyz", _admin_context(self.pki))
        return status == 200 and body.strip() == "ok"

    def up(self) -> Path:
        """Start the control plane unless it already runs; return the kubeconfig's path."""
        with self.lock():
            self._ensure()
            return self.kubeconfig

    def _ensure(self) -> None:
        if self.ready():
            return
        self._stop()
        self.logs.mkdir(parents=True, exist_ok=True)
        binaries = build(self.logs / "build.log")
        try:
            self._start(binaries)
        except ControlPlaneError:
            # A port free_port() found may be taken before the component binds it (another
            # control plane starting beside this one): once more, on other ports.
            self._start(binaries)

    @contextlib.contextmanager
    def shared(self) -> Iterator[Path]:
        """Up while any process holding this is alive: the first starts it, the last stops it."""
        users = self.folder / "users"

        def alive_users() -> set[int]:
            try:
                listed = {int(pid) for pid in users.read_text().split()}
            except (OSError, ValueError):
                listed = set()
            return {pid for pid in listed if Path(f"/proc/{pid}").exists()}

        with self.lock():
            self._ensure()
            users.write_text(" ".join(map(str, sorted(alive_users() | {os.getpid()}))))
        try:
            yield self.kubeconfig
        finally:
            with self.lock():
                remaining = alive_users() - {os.getpid()}
                users.write_text(" ".join(map(str, sorted(remaining))))
                if not remaining:
                    self._stop()
                with warnings.catch_warnings():
                    # Still running on purpose: the last user stops them, by PID.
                    warnings.simplefilter("ignore", ResourceWarning)
                    self._children.clear()

    def down(self) -> list[str]:
        """Stop what `up` started; return the names of the processes it stopped."""
        with self.lock():
            return self._stop()

    def _spawn(self, name: str, argv: list[str]) -> int:
        log = (self.logs / f"{name}.log").open("ab")
        with log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives the make or pytest process that started it
            )
        self._children[process.pid] = process
        processes = {**self._processes(), name: process.pid}
        self._write_state(processes=processes)
        return process.pid

    def _write_state(self, **changes: object) -> None:
        state = {**self._state(), **changes}
        partial = self.state_file.with_suffix(".partial")
        partial.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        partial.rename(self.state_file)

    def _wait(self, name: str, check: object, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        pid = self._processes()[name]
        while time.monotonic() < deadline:
            if callable(check) and check():
                return
            if not self._alive(pid):
                break
            time.sleep(0.25)
        tail = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()[-25:]
        self._stop()
        raise ControlPlaneError(f"{name} did not become {what}; its log ends:\n" + "\n".join(tail))

    def _start(self, binaries: Path) -> None:
        for stale in ("etcd", "pki"):
            shutil.rmtree(self.folder / stale, ignore_errors=True)
        self.kubeconfig.unlink(missing_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        subprocess.run([binaries / "certs", self.pki], check=True)
        client, peer, secure, controllers = (free_port() for _ in range(4))
        server = f"https://127.0.0.1:{secure}"
        self._write_state(bin=str(binaries), server=server, processes={})
        etcd_url = f"http://127.0.0.1:{client}"
        self._spawn(
            "etcd",
            [
                str(binaries / "etcd"),
                "--name=gpuconf-test",
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=gpuconf-test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",  # a test store: its data is thrown away at `down`
                "--log-level=warn",
            ],
        )
        self._wait("etcd", lambda: _get(f"{etcd_url}/health")[0] == 200, "healthy")
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(binaries / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={secure}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--service-account-key-file={pki / 'service-account.pub'}",
                f"--service-account-signing-key-file={pki / 'service-account.key'}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",  # gpuconf's node DaemonSets are privileged, as on kubeadm
                f"--runtime-config={RUNTIME_CONFIG}",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                "-v=1",
            ],
        )
        context = _admin_context(pki)
        self._wait("kube-apiserver", lambda: _get(f"{server}/readyz", context)[0] == 200, "ready")
        write_kubeconfig(self.kubeconfig, server, pki)
        self._spawn(
            "kube-controller-manager",
            [
                str(binaries / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={controllers}",
                f"--controllers={CONTROLLERS}",
                f"--service-account-private-key-file={pki / 'service-account.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                "--leader-elect=false",
                "--profiling=false",
                "-v=1",
            ],
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        healthz = f"https://127.0.0.1:{controllers}/healthz"
        self._wait("kube-controller-manager", lambda: _get(healthz, insecure)[0] == 200, "healthy")

    def _stop(self) -> list[str]:
        stopped = []
        for name, pid in reversed(list(self._processes().items())):
            if not self._alive(pid):
                continue
            os.kill(pid, signal.SIGTERM)
            if not self._ended(pid, 20):
                os.kill(pid, signal.SIGKILL)
                self._ended(pid, 5)
            stopped.append(name)
        while self._children:
            self._children.popitem()[1].wait(timeout=20)
        if self.state_file.exists():
            self._write_state(processes={})
        for stale in ("etcd", "pki"):
            shutil.rmtree(self.folder / stale, ignore_errors=True)
        self.kubeconfig.unlink(missing_ok=True)
        return stopped


TEST_KUBECONFIG = "GPUCONF_TEST_KUBECONFIG"


@contextlib.contextmanager
def for_tests() -> Iterator[Path]:
    """The kubeconfig of the control plane the tests use: the one `make test` started (it
    passes GPUCONF_TEST_KUBECONFIG), or, for a pytest run outside make, one in .cluster/pytest
    shared by every worker of the run and stopped by the last to finish."""
    given = os.environ.get(TEST_KUBECONFIG)
    if given:
        if not Path(given).is_file():
            raise ControlPlaneError(f"{TEST_KUBECONFIG}={given}: no such file")
        yield Path(given)
        return
    plane = ControlPlane(DEFAULT_DIR / "pytest")
    with plane.shared() as kubeconfig:
        yield kubeconfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "build"))
    parser.add_argument(
        "--dir", type=Path, default=DEFAULT_DIR, help="state folder (default .cluster)"
    )
    options = parser.parse_args(argv)
    plane = ControlPlane(options.dir)
    try:
        if options.command == "build":
            print(build())
        elif options.command == "up":
            kubeconfig = plane.up()
            inside = kubeconfig.is_relative_to(Path.cwd())
            print(kubeconfig.relative_to(Path.cwd()) if inside else kubeconfig)
        else:
            stopped = plane.down()
            print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
    except ControlPlaneError as error:
        print(f"control plane: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
