"""The root error types and the exit codes they map to."""

from __future__ import annotations

import argparse
import errno
import os
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast


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


def display_path(path: Path, relative_to: Path | None) -> str:
    """Relative to `relative_to` when inside it, else as given, so editors and CI can open it."""
    if relative_to is not None:
        try:
            return path.resolve().relative_to(relative_to.resolve()).as_posix()
        except ValueError:
            pass
    return os.path.normpath(path.as_posix())


def cannot_write(
    error: OSError, target: Path | None = None, relative_to: Path | None = None
) -> UserError:
    """An output gpuconf cannot write (a read-only folder, a file where a folder must go): the
    user's to fix, not a bug. `target`: the file meant, where the error names a temporary;
    shown as display_path shows it."""
    meant = target if target is not None else error.filename
    where = display_path(Path(meant), relative_to) if meant is not None else "the output"
    hint = (
        " (hint: a file stands where a folder must go)"
        if error.errno in (errno.EEXIST, errno.ENOTDIR)
        else ""
    )
    return UserError(f"cannot write {where}: {error.strerror or error}{hint}")


class UsageError(GpuconfError):
    """The command line is wrong."""

    exit_code = ExitCode.USAGE


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises UsageError, so every command line problem exits through one path."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_command_line(self, argv: Sequence[str]) -> argparse.Namespace:
        """parse_args, except that arguments left over are reported against the usage of the
        subcommand they follow (argparse reports them against the top command's)."""
        options, extras = self.parse_known_args(argv)
        if extras:
            self._chosen(options).error(f"unrecognized arguments: {' '.join(extras)}")
        return options

    def add_commands(self, **kwargs: Any) -> Commands:
        """add_subparsers, of Commands built only when chosen."""
        return cast("Commands", self.add_subparsers(action=Commands, **kwargs))

    def _chosen(self, options: argparse.Namespace) -> argparse.ArgumentParser:
        for action in self._actions:
            if isinstance(action.choices, Mapping) and action.dest in vars(options):
                chosen = action.choices.get(getattr(options, action.dest))
                if isinstance(chosen, ArgumentParser):
                    return chosen._chosen(options)
        return self


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[ArgumentParser]
else:
    _SubParsers = argparse._SubParsersAction

_UNBUILT: Any = object()
"""Where Commands lists a command whose parser is not built yet."""


class Commands(_SubParsers):
    """Subcommands whose parsers are built only once the command line names them. argparse
    spends about a million instructions on each parser and on each argument (a help formatter
    and gettext look-ups apiece), and a command line runs one command. The listing, usage and
    errors of the command above are the same: they read only the names and their help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unbuilt: dict[str, tuple[Callable[[ArgumentParser], None], dict[str, Any]]] = {}

    def add_command(
        self,
        name: str,
        build: Callable[[ArgumentParser], None],
        help: str | None = None,
        **kwargs: Any,
    ) -> None:
        """`name` listed with `help` now, as add_parser lists it; its parser made with `kwargs`
        and given its arguments by `build` when the command line names it."""
        if help is not None:
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        self._name_parser_map[name] = _UNBUILT
        self._unbuilt[name] = (build, kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if values:
            self._build(values[0])
        super().__call__(parser, namespace, values, option_string)

    def _build(self, name: str) -> None:
        unbuilt = self._unbuilt.pop(name, None)
        if unbuilt is None:
            return
        build, kwargs = unbuilt
        chosen = self._parser_class(prog=f"{self._prog_prefix} {name}", **kwargs)
        build(chosen)
        self._name_parser_map[name] = chosen
