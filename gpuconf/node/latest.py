"""The latest value of something, with a way to hear when a newer one is published."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Latest(Generic[T]):
    def __init__(self, value: T) -> None:
        self._lock = threading.Lock()
        self._version = 0
        self._value = value
        self._watchers: list[Callable[[], None]] = []

    def publish(self, value: T) -> None:
        with self._lock:
            self._version += 1
            self._value = value
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher()

    def current(self) -> tuple[int, T]:
        with self._lock:
            return self._version, self._value

    def watch(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call ``watcher`` after every publish; returns what stops that. ``watcher`` runs on the
        publishing thread and must not block (an asyncio task's wake-up, say)."""
        with self._lock:
            self._watchers.append(watcher)

        def stop() -> None:
            with self._lock:
                self._watchers.remove(watcher)

        return stop
