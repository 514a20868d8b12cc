"""Host files are replaced whole, and never through a temporary in a folder a program reads whole."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuconf.node import atomic_files
from gpuconf.node.atomic_files import remove_temporaries, write_atomically


def test_a_replaced_file_keeps_its_mode_and_gets_the_new_bytes(tmp_path: Path) -> None:
    target = tmp_path / "daemon.json"
    target.write_bytes(b"old")
    target.chmod(0o600)
    write_atomically(target, b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["daemon.json"]


def test_a_file_in_a_dot_d_folder_is_staged_in_the_folder_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CRI-O reads every file under crio.conf.d: a crash between writing and renaming must not
    # leave a half-written temporary there.
    folder = tmp_path / "crio.conf.d"
    staged: list[Path] = []

    def recording_replace(source: str, destination: Path) -> None:
        staged.append(Path(source).parent)
        os.rename(source, destination)

    monkeypatch.setattr(atomic_files.os, "replace", recording_replace)
    write_atomically(folder / "99-nvidia.conf", b"[crio.runtime]\n")
    write_atomically(tmp_path / "daemon.json", b"{}")
    assert staged == [tmp_path, tmp_path]
    assert [p.name for p in folder.iterdir()] == ["99-nvidia.conf"]


def test_an_unsynced_replacement_syncs_nothing_and_a_synced_one_the_file_and_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []

    def recording_fsync(descriptor: int) -> None:
        synced.append("folder" if os.path.isdir(f"/proc/self/fd/{descriptor}") else "file")

    monkeypatch.setattr(atomic_files.os, "fsync", recording_fsync)
    write_atomically(tmp_path / "state.json", b"{}", sync=False)
    assert synced == []
    assert (tmp_path / "state.json").read_bytes() == b"{}"
    write_atomically(tmp_path / "state.json", b"[]")
    assert synced == ["file", "folder"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_temporaries_a_dead_writer_left_are_removed_and_nothing_else(tmp_path: Path) -> None:
    for name in (
        "state.json",
        ".state.json.k2x9q1",
        ".state.json.x",
        "other.json",
        ".other.json.a",
    ):
        (tmp_path / name).write_text("{}")
    remove_temporaries(tmp_path / "state.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other.json.a",
        "other.json",
        "state.json",
    ]
    remove_temporaries(tmp_path / "absent" / "state.json")  # no folder: nothing to do
