"""The root error types and the exit codes they map to."""

from __future__ import annotations

import argparse
from enum import IntEnum
from typing import NoReturn


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError, so every command line problem exits through one path."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")
