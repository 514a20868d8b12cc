"""One MPS control daemon: its GPUs in exclusive-process mode, limits set on the server side.

As NVIDIA's mps-control-daemon does it: `nvidia-smi -i <uuid> -c EXCLUSIVE_PROCESS` for each
GPU, `nvidia-cuda-mps-control -d` with the pipe and log directories in its environment, then
commands on the control's stdin: `set_default_device_pinned_mem_limit <index> <MiB>M` per GPU
and `set_default_active_thread_percentage <n>`. Those defaults bind every client the server
starts, unlike client environment variables, which a pod can override. `quit` stops it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpuconf.api.node_config import ResourceSettings

MPS_CONTROL = "nvidia-cuda-mps-control"
NVIDIA_SMI = "nvidia-smi"
COMMAND_TIMEOUT_SECONDS = 10.0
EXCLUSIVE_PROCESS = "EXCLUSIVE_PROCESS"
DEFAULT_COMPUTE_MODE = "DEFAULT"
FULL_GPU_PERCENT = 100


class MpsFailed(Exception):
    """A daemon command failed; the message says which and why."""


@dataclass(frozen=True)
class MpsDaemonSpec:
    resource: str
    pipe_directory: Path
    log_directory: Path
    gpus: tuple[tuple[int, str], ...]
    """(NVML index, UUID) of each GPU the daemon serves."""
    pinned_memory_limit_mib: int | None
    active_thread_percentage: int


def daemon_spec(resource: ResourceSettings, gpus: tuple[tuple[int, str], ...]) -> MpsDaemonSpec:
    sharing = resource.sharing
    if sharing.mps_pipe_directory is None:
        raise ValueError(f"{resource.name}: MPS without a pipe directory")
    pipe = Path(sharing.mps_pipe_directory)
    threads = sharing.mps_active_thread_percentage or max(1, FULL_GPU_PERCENT // sharing.replicas)
    return MpsDaemonSpec(
        resource.name, pipe, pipe.parent / "log", gpus, sharing.mps_memory_limit_mi_b, threads
    )


class MpsDaemon:
    def __init__(self, spec: MpsDaemonSpec) -> None:
        self.spec = spec

    def start(self) -> None:
        spec = self.spec
        for _, uuid in spec.gpus:
            self._run([NVIDIA_SMI, "-i", uuid, "-c", EXCLUSIVE_PROCESS])
        spec.pipe_directory.mkdir(parents=True, exist_ok=True)
        spec.log_directory.mkdir(parents=True, exist_ok=True)
        self._run([MPS_CONTROL, "-d"], detached=True)
        if spec.pinned_memory_limit_mib is not None:
            for index, _ in spec.gpus:
                self.send(
                    f"set_default_device_pinned_mem_limit {index} {spec.pinned_memory_limit_mib}M"
                )
        self.send(f"set_default_active_thread_percentage {spec.active_thread_percentage}")

    def answers(self) -> bool:
        try:
            self.send("get_default_active_thread_percentage")
        except MpsFailed:
            return False
        return True

    def stop(self) -> None:
        """Quit the daemon and give the GPUs back their default compute mode."""
        problems = []
        try:
            self.send("quit")
        except MpsFailed as failed:
            problems.append(str(failed))
        for _, uuid in self.spec.gpus:
            try:
                self._run([NVIDIA_SMI, "-i", uuid, "-c", DEFAULT_COMPUTE_MODE])
            except MpsFailed as failed:
                problems.append(str(failed))
        if problems:
            raise MpsFailed("; ".join(problems))

    def send(self, command: str) -> str:
        return self._run([MPS_CONTROL], stdin=command + "\n")

    def _run(self, argv: list[str], stdin: str | None = None, detached: bool = False) -> str:
        """``detached``: the command leaves a daemon behind that must not hold our pipes."""
        env = {
            **os.environ,
            "CUDA_MPS_PIPE_DIRECTORY": str(self.spec.pipe_directory),
            "CUDA_MPS_LOG_DIRECTORY": str(self.spec.log_directory),
        }
        what = " ".join(argv) + (f" <<< {stdin.strip()}" if stdin else "")
        try:
            output = subprocess.DEVNULL if detached else subprocess.PIPE
            done = subprocess.run(
                argv,
                input=stdin,
                stdout=output,
                stderr=output,
                text=True,
                env=env,
                timeout=COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise MpsFailed(f"{what}: {error}") from None
        if done.returncode != 0:
            said = (done.stderr or done.stdout or "").strip().splitlines()
            raise MpsFailed(f"{what}: exit {done.returncode}: {said[-1] if said else ''}")
        return done.stdout or ""
