"""Plain logfmt lines on stderr: one event per line, key=value fields, never a traceback."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TextIO

_ROOT = "gpuconf.node"
FIELDS = "gpuconf_fields"


class _LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        stamp += f".{int(record.msecs):03d}Z"
        line = (
            f"time={stamp} level={record.levelname.lower()} "
            f"logger={record.name} msg={quote(record.getMessage())}"
        )
        extra: dict[str, object] = getattr(record, FIELDS, {})
        return " ".join([line, *(f"{key}={quote(value)}" for key, value in extra.items())])


def quote(value: object) -> str:
    text = str(value)
    if text and not any(c in text for c in ' "=\n\t'):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def kv(**values: object) -> dict[str, object]:
    """Fields for a log call's ``extra``: ``log.info("registered", extra=kv(resource=name))``."""
    return {FIELDS: values}


def get(name: str) -> logging.Logger:
    return logging.getLogger(f"{_ROOT}.{name}")


def configure(stream: TextIO = sys.stderr, level: int = logging.INFO) -> None:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("grpc").setLevel(logging.CRITICAL)
    threading.excepthook = _log_thread_crash


def _log_thread_crash(args: threading.ExceptHookArgs) -> None:
    # A crashed helper thread is a bug; say so in one line instead of a traceback.
    name = args.thread.name if args.thread is not None else "?"
    get("thread").error(
        "thread crashed",
        extra=kv(thread=name, error=f"{args.exc_type.__name__}: {args.exc_value}"),
    )
