"""Running a transaction again when the database gave it up to let another one through.

PostgreSQL aborts one of two transactions that wait on each other (a deadlock, SQLSTATE 40P01) or
that cannot be serialized (40001). Neither says anything about the data: the same transaction,
started again, succeeds. Writers that take their locks in one order cannot deadlock each other,
so this is the fallback for the waits nobody ordered (index pages, foreign-key checks).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError

RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
"""serialization_failure and deadlock_detected."""
ATTEMPTS = 4
BACKOFF_SECONDS = 0.05

T = TypeVar("T")


def is_retryable(error: BaseException) -> bool:
    """Whether ``error`` is a deadlock or serialization failure, which the same work survives run again."""
    cause = error.__cause__ if isinstance(error, OperationalError) else error
    return getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES


def retrying(
    work: Callable[[], T], *, attempts: int = ATTEMPTS, sleep: Callable[[float], None] = time.sleep
) -> T:
    """``work()``, run again (up to ``attempts`` times in all) while the database aborts it as retryable.

    ``work`` must be a whole transaction, so that a retry starts from nothing it wrote. The waits
    grow and are jittered, so two transactions that collided do not collide again in step.
    """
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except OperationalError as error:
            if attempt == attempts or not is_retryable(error):
                raise
            sleep(BACKOFF_SECONDS * attempt * (1 + random.random()))
    raise AssertionError("unreachable: the last attempt returns or raises")
