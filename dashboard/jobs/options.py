"""What every task here is: idempotent, so acknowledged late and retried on a database hiccup."""

from __future__ import annotations

from typing import Any

from django.db import OperationalError

IDEMPOTENT: dict[str, Any] = {
    # A message whose worker died is delivered again: running a task twice leaves the same rows.
    "acks_late": True,
    # A database that is briefly away (a restart, a failover) is waited for, longer each time.
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "max_retries": 5,
}
