"""The shared cache (Redis, with ``CACHE_URL``) as the optimisation it is: while Redis cannot be
reached, a read misses and a write is dropped, so a page computes what it would have read.

A Redis outage gave 500 on every page that reads the cache. Now the first failed call in a process
logs a warning (again at most once a minute while the outage lasts) and, for
:data:`RETRY_AFTER_SECONDS`, the process does not ask Redis at all: a page that reads the cache
five times waits for one refused connection, not five. The login throttle keeps its own, strict
connection (see :mod:`dashboard.access.login_throttle`), which falls back to the database instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger("dashboard.cache")

UNREACHABLE: tuple[type[Exception], ...] = (RedisConnectionError, RedisTimeoutError)
"""What Redis raises when it is down, refuses connections or does not answer in time."""

WARN_EVERY_SECONDS = 60.0
RETRY_AFTER_SECONDS = 5.0

T = TypeVar("T")


class CacheOutage:
    """One process's view of the shared cache's reachability: when it last failed, when that was said."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failed_at: float | None = None
        self._warned_at: float | None = None

    def failed(self, what: str, error: BaseException) -> None:
        """Note a failed call by ``what`` and warn, unless a warning went out within the minute."""
        now = time.monotonic()
        with self._lock:
            self._failed_at = now
            if self._warned_at is not None and now - self._warned_at < WARN_EVERY_SECONDS:
                return
            self._warned_at = now
        logger.warning("the shared cache (CACHE_URL) is unreachable; %s goes on without it: %s", what, error)

    def resting(self) -> bool:
        """Whether a failure was so recent that Redis is not asked again yet."""
        with self._lock:
            return self._failed_at is not None and time.monotonic() - self._failed_at < RETRY_AFTER_SECONDS

    def reset(self) -> None:
        """Forget the outage (a test's next case, a process told Redis is back)."""
        with self._lock:
            self._failed_at = self._warned_at = None


OUTAGE = CacheOutage()


class TolerantRedisCache(RedisCache):
    """Django's Redis cache, answering as an empty cache while Redis is unreachable."""

    def _tolerant(self, fallback: T, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if OUTAGE.resting():
            return fallback
        try:
            return call(*args, **kwargs)
        except UNREACHABLE as error:
            OUTAGE.failed("the page", error)
            return fallback

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        return self._tolerant(default, super().get, key, default, version)

    def get_many(self, keys: Iterable[Any], version: int | None = None) -> dict[Any, Any]:
        return self._tolerant({}, super().get_many, keys, version)

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._tolerant(False, super().has_key, key, version)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        self._tolerant(None, super().set, key, value, timeout, version)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._tolerant(False, super().add, key, value, timeout, version)

    def set_many(
        self, data: dict[Any, Any], timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[Any]:
        return self._tolerant(list(data), super().set_many, data, timeout, version)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._tolerant(False, super().touch, key, timeout, version)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._tolerant(False, super().delete, key, version)

    def delete_many(self, keys: Iterable[Any], version: int | None = None) -> None:
        self._tolerant(None, super().delete_many, keys, version)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        # As for a key that is not there: nothing counted survives an outage.
        def missing() -> int:
            raise ValueError(f"Key {key!r} not found: the shared cache is unreachable")

        if OUTAGE.resting():
            return missing()
        try:
            return int(super().incr(key, delta, version))
        except UNREACHABLE as error:
            OUTAGE.failed("the page", error)
            return missing()

    def clear(self) -> None:
        self._tolerant(None, super().clear)
