"""NVML played from a YAML file, so the node runtime runs and is tested with no GPU.

The file is read again whenever it changes: deleting a GPU from it is a GPU falling off
the bus. XID events are the lines appended to a JSONL file the YAML file names.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_core import SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

from gpuconf.api.shape_errors import wording
from gpuconf.diagnostics import Diagnostic
from gpuconf.formats.located_yaml import LoadFailed, Located, parse_text
from gpuconf.node.nvml.api import GpuInfo, MigAttributes, MigDevice, NvmlError, XidEvent

EVENT_POLL_SECONDS = 0.05


# The file's shape as a pydantic-core schema (strict, camelCase keys, unknown keys refused):
# pydantic-core is loaded for the node config anyway, and pydantic on top of it would add
# 4 MiB to the resident memory of every runtime that plays NVML from a file.
def _field(schema: cs.CoreSchema, key: str, default: Any = ...) -> Any:
    if default is not ...:
        schema = cs.with_default_schema(schema, default=default)
    return cs.typed_dict_field(schema, required=default is ..., validation_alias=key)


def _record(fields: dict[str, Any]) -> cs.TypedDictSchema:
    return cs.typed_dict_schema(fields, extra_behavior="forbid", strict=True)


_TEXT = cs.str_schema(strict=True)
# "8.0" as nvidia-smi --query-gpu=compute_cap prints it; "12.4" as it prints "CUDA Version".
MAJOR_MINOR_PATTERN = r"^[0-9]+\.[0-9]+$"
_MAJOR_MINOR = cs.nullable_schema(cs.str_schema(strict=True, pattern=MAJOR_MINOR_PATTERN))
MAJOR_MINOR_HINT = 'write it quoted as nvidia-smi prints it, e.g. "8.0"'
_COUNT = cs.int_schema(ge=0, strict=True)
# nvmlDeviceAttributes_t's field names.
_MIG_ATTRIBUTES = _record({
    "multiprocessor_count": _field(_COUNT, "multiprocessorCount"),
    "shared_copy_engine_count": _field(_COUNT, "sharedCopyEngineCount"),
    "shared_decoder_count": _field(_COUNT, "sharedDecoderCount"),
    "shared_encoder_count": _field(_COUNT, "sharedEncoderCount"),
    "shared_jpeg_count": _field(_COUNT, "sharedJpegCount"),
    "shared_ofa_count": _field(_COUNT, "sharedOfaCount"),
    "gpu_instance_slice_count": _field(_COUNT, "gpuInstanceSliceCount"),
    "compute_instance_slice_count": _field(_COUNT, "computeInstanceSliceCount"),
    "memory_size_mb": _field(_COUNT, "memorySizeMB"),
})  # fmt: skip
_MIG_DEVICE = _record({
    "uuid": _field(_TEXT, "uuid"),
    "profile": _field(_TEXT, "profile"),
    "gpu_instance_id": _field(cs.int_schema(ge=0, strict=True), "gpuInstanceId"),
    "compute_instance_id": _field(cs.int_schema(ge=0, strict=True), "computeInstanceId"),
    "attributes": _field(cs.nullable_schema(_MIG_ATTRIBUTES), "attributes", None),
})  # fmt: skip
_GPU = _record({
    "index": _field(cs.int_schema(ge=0, strict=True), "index"),
    "uuid": _field(_TEXT, "uuid"),
    "name": _field(_TEXT, "name"),
    "memory_mib": _field(cs.int_schema(ge=1, strict=True), "memoryMiB"),
    "pci_bus_id": _field(_TEXT, "pciBusId"),
    "numa_node": _field(cs.nullable_schema(cs.int_schema(strict=True)), "numaNode", None),
    # YAML mapping keys reach us as text; "1" must still mean GPU 1.
    "nvlinks": _field(
        cs.dict_schema(cs.int_schema(strict=False), cs.int_schema(ge=1, strict=True)),
        "nvlinks",
        {},
    ),
    "mig_enabled": _field(cs.bool_schema(strict=True), "migEnabled", False),
    "mig_devices": _field(cs.list_schema(_MIG_DEVICE, strict=True), "migDevices", []),
    "reset_pending": _field(cs.bool_schema(strict=True), "resetPending", False),
    "compute_capability": _field(_MAJOR_MINOR, "computeCapability", None),
    # Default: whether MIG is enabled.
    "mig_capable": _field(cs.nullable_schema(cs.bool_schema(strict=True)), "migCapable", None),
})  # fmt: skip
_FILE_SHAPE = _record({
    "driver_version": _field(_TEXT, "driverVersion", "fake"),
    "cuda_driver_version": _field(_MAJOR_MINOR, "cudaDriverVersion", None),
    "gpus": _field(cs.list_schema(_GPU, strict=True), "gpus"),
    "events": _field(cs.nullable_schema(_TEXT), "events", None),
})  # fmt: skip
_FILE = SchemaValidator(_FILE_SHAPE)


@dataclass(frozen=True)
class _Inventory:
    driver_version: str
    cuda_driver_version: tuple[int, int] | None
    gpus: tuple[GpuInfo, ...]
    events_path: Path | None


def _stat_key(path: Path) -> tuple[int, int, int]:
    stat = path.stat()
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _gpu_info(gpu: dict[str, Any]) -> GpuInfo:
    return GpuInfo(
        index=gpu["index"],
        uuid=gpu["uuid"],
        name=gpu["name"],
        memory_mib=gpu["memory_mib"],
        pci_bus_id=gpu["pci_bus_id"],
        numa_node=gpu["numa_node"],
        nvlinks=dict(sorted(gpu["nvlinks"].items())),
        mig_enabled=gpu["mig_enabled"],
        mig_devices=tuple(
            MigDevice(
                m["uuid"],
                m["profile"],
                m["gpu_instance_id"],
                m["compute_instance_id"],
                None if m["attributes"] is None else MigAttributes(**m["attributes"]),
            )
            for m in gpu["mig_devices"]
        ),
        reset_pending=gpu["reset_pending"],
        compute_capability=_version(gpu["compute_capability"]),
        mig_capable=gpu["mig_enabled"] if gpu["mig_capable"] is None else gpu["mig_capable"],
    )


def _version(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    major, minor = text.split(".")
    return int(major), int(minor)


def _repeated(gpus: list[dict[str, Any]]) -> str | None:
    for attribute in ("index", "uuid"):
        values = [gpu[attribute] for gpu in gpus]
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            return f"GPU {attribute} repeated: {', '.join(repeated)}"
    return None


def _validation_message(located: Located, error: ValidationError) -> str:
    diagnostics: list[Diagnostic] = []
    for problem in error.errors(include_url=False):
        path = tuple(part for part in problem["loc"] if part != "[key]")
        value = located.value_at(path)
        if (problem.get("ctx") or {}).get("pattern") == MAJOR_MINOR_PATTERN:
            message, hint = f"{value!r} is not MAJOR.MINOR", MAJOR_MINOR_HINT
        else:
            message, hint = wording(problem, value)
        diagnostics.append(located.diagnostic(path, message, hint))
    return "\n".join(d.as_text() for d in sorted(diagnostics))


def read_inventory(path: Path) -> _Inventory:
    """Parse and check the fake file; any problem is an NvmlError naming file:line:col."""
    display = path.as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NvmlError(f"{display}: cannot read the fake NVML file: {error}") from None
    try:
        located = parse_text(text, display)
    except LoadFailed as failed:
        raise NvmlError(f"invalid fake NVML file: {failed.diagnostic.as_text()}") from None
    try:
        parsed = _FILE.validate_python(located.data)
    except ValidationError as error:
        raise NvmlError(f"invalid fake NVML file:\n{_validation_message(located, error)}") from None
    repeated = _repeated(parsed["gpus"])
    if repeated is not None:
        where = located.diagnostic(("gpus",), repeated).as_text()
        raise NvmlError(f"invalid fake NVML file:\n{where}")
    events = None if parsed["events"] is None else path.parent / parsed["events"]
    gpus = tuple(sorted((_gpu_info(g) for g in parsed["gpus"]), key=lambda g: g.index))
    cuda = _version(parsed["cuda_driver_version"])
    return _Inventory(parsed["driver_version"], cuda, gpus, events)


class _EventTail:
    """Complete JSONL lines appended to a file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # Bytes and complete lines read so far: a line is named by its number in the file.
        self.offset, self.line_number = _size_and_lines(path)
        self.pending = b""

    def read_new(self) -> list[XidEvent]:
        """The events of the lines appended since the last read. A malformed line raises, once
        the events before it are returned; the lines after it are read next time."""
        try:
            with self.path.open("rb") as stream:
                if os.fstat(stream.fileno()).st_size < self.offset:
                    self.offset, self.line_number, self.pending = 0, 0, b""  # truncated
                stream.seek(self.offset)
                chunk = stream.read()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise NvmlError(f"{self.path}: cannot read fake XID events: {error}") from None
        self.offset += len(chunk)
        *lines, self.pending = (self.pending + chunk).split(b"\n")
        events: list[XidEvent] = []
        for index, line in enumerate(lines):
            try:
                event = self._event(line) if line.strip() else None
            except NvmlError:
                if events:
                    self._read_again(lines[index:])
                    return events
                self._read_again(lines[index + 1 :])
                self.line_number += 1
                raise
            self.line_number += 1
            if event is not None:
                events.append(event)
        return events

    def _read_again(self, lines: list[bytes]) -> None:
        self.pending = b"".join(line + b"\n" for line in lines) + self.pending

    def _event(self, line: bytes) -> XidEvent:
        where = f"{self.path}:{self.line_number + 1}"
        try:
            data: Any = json.loads(line)
        except ValueError as error:
            raise NvmlError(f"{where}: not a JSON event line: {error}") from None
        uuid, xid, instance = (
            (data.get("uuid"), data.get("xid"), data.get("gpuInstanceId"))
            if isinstance(data, dict)
            else (None, None, None)
        )
        if not isinstance(uuid, str) or type(xid) is not int or not _optional_int(instance):
            raise NvmlError(
                f'{where}: an event is {{"uuid": "GPU-…", "xid": 79}} with an optional integer '
                f"gpuInstanceId, got {line.decode('utf-8', 'replace')}"
            )
        return XidEvent(uuid=uuid, xid=xid, gpu_instance_id=instance)


def _optional_int(value: object) -> bool:
    return value is None or type(value) is int


def _size_and_lines(path: Path) -> tuple[int, int]:
    """The file's size and how many complete lines it holds; (0, 0) when it cannot be read."""
    size = lines = 0
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(1 << 16):
                size += len(chunk)
                lines += chunk.count(b"\n")
    except OSError:
        return 0, 0
    return size, lines


class FakeNvml:
    """The Nvml protocol over a YAML inventory file and a JSONL XID event file.

    Events already in the event file when it is first seen are history, not news: like
    NVML, only events that arrive after opening are reported.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stat: tuple[int, int, int] | None = None
        self._inventory = self._reload()
        self._events: _EventTail | None = None
        self._follow_events()

    def driver_version(self) -> str:
        return self._current().driver_version

    def cuda_driver_version(self) -> tuple[int, int] | None:
        return self._current().cuda_driver_version

    def devices(self) -> Sequence[GpuInfo]:
        return self._current().gpus

    def wait_for_events(self, timeout_seconds: float) -> Sequence[XidEvent]:
        deadline = time.monotonic() + max(timeout_seconds, 0.0)
        while True:
            self._current()
            events = self._events.read_new() if self._events is not None else []
            remaining = deadline - time.monotonic()
            if events or remaining <= 0:
                return events
            time.sleep(min(EVENT_POLL_SECONDS, remaining))

    def close(self) -> None:
        self._events = None

    def _current(self) -> _Inventory:
        try:
            changed = _stat_key(self.path) != self._stat
        except OSError as error:
            raise NvmlError(f"{self.path}: cannot read the fake NVML file: {error}") from None
        if changed:
            self._inventory = self._reload()
            self._follow_events()
        return self._inventory

    def _reload(self) -> _Inventory:
        try:
            stat = _stat_key(self.path)
        except OSError as error:
            raise NvmlError(f"{self.path}: cannot read the fake NVML file: {error}") from None
        inventory = read_inventory(self.path)
        self._stat = stat
        return inventory

    def _follow_events(self) -> None:
        wanted = self._inventory.events_path
        current = self._events.path if self._events is not None else None
        if wanted != current:
            self._events = _EventTail(wanted) if wanted is not None else None
