"""The root error types and the exit codes they map to."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    INVALID_INPUT = 1
    USAGE = 2
    INTERNAL = 3
    INTERRUPTED = 130


class GpuconfError(Exception):
    """Base of every error gpuconf raises on purpose; carries its exit code."""

    exit_code: ExitCode = ExitCode.INTERNAL


class UserError(GpuconfError):
    """The input or the environment is wrong; the message tells the user what to fix."""

    exit_code = ExitCode.INVALID_INPUT


class UsageError(GpuconfError):
    """The command line is wrong."""

    exit_code = ExitCode.USAGE
