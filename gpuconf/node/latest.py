"""The latest value of something, with a way to wait until a newer one is published."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Latest(Generic[T]):
    def __init__(self, value: T) -> None:
        self._changed = threading.Condition()
        self._version = 0
        self._value = value
        self._watchers: list[Callable[[], None]] = []

    def publish(self, value: T) -> None:
        with self._changed:
            self._version += 1
            self._value = value
            self._changed.notify_all()
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher()

    def current(self) -> tuple[int, T]:
        with self._changed:
            return self._version, self._value

    def wait_newer(self, version: int, timeout: float) -> tuple[int, T] | None:
        """The value once its version passes ``version``; None if that takes over ``timeout``."""
        with self._changed:
            if self._changed.wait_for(lambda: self._version != version, timeout):
                return self._version, self._value
            return None

    def wake_all(self) -> None:
        with self._changed:
            self._changed.notify_all()
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher()

    def watch(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call ``watcher`` after every publish (and wake_all); returns what stops that. For
        waiters that cannot block a thread, such as an asyncio task."""
        with self._changed:
            self._watchers.append(watcher)

        def stop() -> None:
            with self._changed:
                self._watchers.remove(watcher)

        return stop
