"""Polling helpers: every wait has a deadline and ends in an assertion.

No test may pass by sleeping. A wait polls an observation until a condition
holds and fails with the last observation when the deadline passes; a
stability check observes a value for a window and fails on any change.
"""

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def wait_for(observe: Callable[[], T], condition: Callable[[T], bool], *,
             timeout: float, what: str, interval: float = 0.05) -> T:
    """Returns the first observation satisfying condition; fails at timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = observe()
        if condition(value):
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(
                f"timed out after {timeout:.1f}s waiting for {what}; "
                f"last observed: {value!r}")
        time.sleep(interval)


def assert_stays(observe: Callable[[], Any], *, duration: float, what: str,
                 interval: float = 0.1) -> Any:
    """Observes for `duration` seconds; fails if the value ever changes."""
    first = observe()
    start = time.monotonic()
    while True:
        elapsed = time.monotonic() - start
        value = observe()
        if value != first:
            raise AssertionError(
                f"{what} changed after {elapsed:.2f}s: {first!r} -> {value!r}")
        if elapsed >= duration:
            return first
        time.sleep(interval)
