"""Emit: write rendered clusters to the output folder atomically, or compare them with it."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from gpuconf.compiler.plan.readme import GENERATED_MARK, README
from gpuconf.compiler.render import RenderedTree
from gpuconf.errors import UserError, cannot_write, display_path

STAGING_PREFIX = ".gpuconf-staging-"
STAGING_MAX_AGE_S = 3600


def written_by_gpuconf(folder: Path) -> bool:
    """A folder gpuconf wrote (its README says so), and may therefore replace or remove."""
    try:
        with (folder / README).open(encoding="utf-8") as handle:
            return GENERATED_MARK in handle.read(4096)
    except OSError:
        return False


def _write_files(root: Path, tree: RenderedTree) -> None:
    # Readers see the old tree or the new one: the swap below is a rename. Files are not
    # fsynced one by one: the tree is regenerated from its sources (and kept in git), and
    # `render --check` finds one a crash damaged, so a thousand fsyncs would buy nothing.
    # Paths are plain strings here: pathlib would cost more than the writing itself.
    base = os.fspath(root)
    made: set[str] = set()
    for relative, data in tree.items():
        target = f"{base}/{relative}"
        folder = target.rpartition("/")[0]
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            # Whatever the umask or a folder's default ACL; folders follow the user's umask.
            os.fchmod(descriptor, 0o644)
            os.write(descriptor, data)
        finally:
            os.close(descriptor)


def _writer_alive(staging: Path) -> bool:
    """Whether the render that made this staging folder (its pid is in the name) still runs."""
    pid_text = staging.name.removeprefix(STAGING_PREFIX).partition("-")[0]
    try:
        if not pid_text.isdigit() or time.time() - staging.stat().st_mtime > STAGING_MAX_AGE_S:
            return False  # a reused pid must not keep an old leftover forever
    except OSError:
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def interrupted_staging(out: Path) -> list[Path]:
    """Staging folders a killed render left behind (a running render's own is not among them)."""
    if not out.is_dir():
        return []
    return sorted(
        p
        for p in out.iterdir()
        if p.name.startswith(STAGING_PREFIX) and p.is_dir() and not _writer_alive(p)
    )


def foreign(out: Path, clusters: Mapping[str, RenderedTree]) -> list[Path]:
    """What else is in the output folder: not a cluster gpuconf wrote, nor its staging."""
    if not out.is_dir():
        return []
    return sorted(
        p
        for p in out.iterdir()
        if p.name not in clusters
        and not p.name.startswith(STAGING_PREFIX)
        and not (p.is_dir() and written_by_gpuconf(p))
    )


def stale_clusters(out: Path, clusters: Mapping[str, RenderedTree]) -> list[Path]:
    if not out.is_dir():
        return []
    return sorted(
        child
        for child in out.iterdir()
        if child.is_dir() and child.name not in clusters and written_by_gpuconf(child)
    )


def write(
    out: Path, clusters: Mapping[str, RenderedTree], prune: bool, relative_to: Path | None = None
) -> None:
    """Stage every cluster, then swap each into place; on failure the old tree is left as it was.
    Paths in errors are shown as display_path shows them."""
    for name in clusters:
        existing = out / name
        if existing.exists() and not written_by_gpuconf(existing):
            raise UserError(
                f"{display_path(existing, relative_to)} exists and was not written by gpuconf; "
                "move it away first"
            )
    try:
        _write(out, clusters, prune)
    except OSError as error:
        raise cannot_write(error, relative_to=relative_to) from None


def _write(out: Path, clusters: Mapping[str, RenderedTree], prune: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for leftover in interrupted_staging(out):
        shutil.rmtree(leftover, ignore_errors=True)
    staging = _new_staging(out)
    try:
        for name, tree in clusters.items():
            _write_files(staging / name, tree)
        for name in clusters:
            target = out / name
            retired = staging / f"{name}.old"
            if target.exists():
                target.rename(retired)
            (staging / name).rename(target)
        if prune:
            for folder in stale_clusters(out, clusters):
                folder.rename(staging / f"{folder.name}.stale")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _new_staging(out: Path) -> Path:
    """A new folder for this render, private to its user, named with its pid (as
    `interrupted_staging` reads it back); tempfile.mkdtemp would do, at tempfile's import."""
    while True:
        staging = out / f"{STAGING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
        try:
            staging.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return staging


def _on_disk(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _text(data: bytes) -> list[str]:
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _unified_diff(old: list[str], new: list[str], fromfile: str, tofile: str) -> Iterator[str]:
    import difflib  # only where a file differs: an up-to-date check never needs it

    return difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile)


def diff(out: Path, clusters: Mapping[str, RenderedTree], prune: bool) -> Iterator[str]:
    """Unified diff lines from what is in `out` to what would be written."""
    for leftover in interrupted_staging(out):
        # Render removes these; until then the folder is not what render would leave.
        yield f"Only in {out.name}: {leftover.name} (left by an interrupted render)\n"
    for name, tree in sorted(clusters.items()):
        current = _on_disk(out / name)
        for relative in sorted(set(current) | set(tree)):
            old, new = current.get(relative), tree.get(relative)
            if old == new:
                continue
            label = f"{name}/{relative}"
            yield from _unified_diff(
                _text(old or b""),
                _text(new or b""),
                fromfile=f"a/{label}" if old is not None else "/dev/null",
                tofile=f"b/{label}" if new is not None else "/dev/null",
            )
    if prune:
        for folder in stale_clusters(out, clusters):
            for relative, data in _on_disk(folder).items():
                yield from _unified_diff(
                    _text(data), [], fromfile=f"a/{folder.name}/{relative}", tofile="/dev/null"
                )
