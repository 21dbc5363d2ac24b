"""The login throttle's store with a shared cache: django-axes' cache handler while Redis answers,
its database handler for any call Redis does not.

With ``CACHE_URL`` the failure counts live in Redis, where every web process sees them. A Redis
outage made every login answer 500; a throttle that simply skipped Redis would let a guesser try
without limit for as long as it lasted. So a call Redis refuses is made on the database, which every
process shares too: failures during an outage are counted there, and a lockout reached there holds
until its cool-off ends, whichever store is asked. The warning is the shared cache's, at most once
a minute (:mod:`dashboard.storage.shared_cache`).
"""

from __future__ import annotations

from typing import Any

from axes.handlers.base import AxesBaseHandler
from axes.handlers.cache import AxesCacheHandler
from axes.handlers.database import AxesDatabaseHandler

from dashboard.storage.shared_cache import OUTAGE, UNREACHABLE


class CacheOrDatabaseHandler(AxesBaseHandler):
    """Each of axes' calls on the cache handler, or on the database handler while Redis is down."""

    def __init__(self) -> None:
        self.cache_handler = AxesCacheHandler()
        self.database_handler = AxesDatabaseHandler()

    def _either(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if not OUTAGE.resting():
            try:
                return getattr(self.cache_handler, name)(*args, **kwargs)
            except UNREACHABLE as error:
                OUTAGE.failed("the login throttle (counting in the database)", error)
        return getattr(self.database_handler, name)(*args, **kwargs)

    def get_failures(self, request: Any, credentials: dict[str, Any] | None = None) -> int:
        # A lockout counted in the database during an outage outlasts it: the larger count holds.
        counted = self._either("get_failures", request, credentials)
        if OUTAGE.resting():
            return int(counted)
        return max(int(counted), int(self.database_handler.get_failures(request, credentials)))

    def user_login_failed(
        self, sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any
    ) -> None:
        self._either("user_login_failed", sender, credentials, request, **kwargs)
        if (
            request is not None
            and not OUTAGE.resting()
            and self.database_handler.get_failures(request, credentials)
        ):
            # Counted on where the outage left off, so the lockout it reached is answered as one.
            self.database_handler.user_login_failed(sender, credentials, request, **kwargs)

    def user_logged_in(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        self._either("user_logged_in", sender, request, user, **kwargs)
        if not OUTAGE.resting():
            # A success resets the counts: those an outage left in the database too.
            self.database_handler.user_logged_in(sender, request, user, **kwargs)

    def user_logged_out(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        self._either("user_logged_out", sender, request, user, **kwargs)

    def reset_attempts(self, **kwargs: Any) -> int:
        try:
            cached = int(self._either("reset_attempts", **kwargs))
        except NotImplementedError:
            cached = 0  # "everyone" cannot be cleared from a cache: those counts expire on their own
        return cached + int(self.database_handler.reset_attempts(**kwargs))

    def reset_logs(self, *, age_days: int | None = None) -> int:
        return int(self.database_handler.reset_logs(age_days=age_days))

    def reset_failure_logs(self, *, age_days: int | None = None) -> int:
        return int(self.database_handler.reset_failure_logs(age_days=age_days))

    def remove_out_of_limit_failure_logs(self, *, username: str) -> int:
        return int(self.database_handler.remove_out_of_limit_failure_logs(username=username))

    def post_save_access_attempt(self, instance: Any, **kwargs: Any) -> None:
        self.database_handler.post_save_access_attempt(instance, **kwargs)

    def post_delete_access_attempt(self, instance: Any, **kwargs: Any) -> None:
        self.database_handler.post_delete_access_attempt(instance, **kwargs)
