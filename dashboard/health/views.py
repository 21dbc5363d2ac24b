"""``GET /healthz``: the state of the database, the broker and the shared cache, as JSON.

Anyone may ask, as a load balancer does (no login, no cookie, no database read before the check):
it gets the overall status and each service's state word, which name no host, version or error.
The error text and timings, which can name hosts and ports, are added only for a request that
carries ``Authorization: Bearer`` with the ``CACHESCOPE_HEALTH_TOKEN`` of the environment; with no
such token set, nobody gets them. The answer is 503 while the database is down (no page can
answer), else 200, ``degraded`` when the broker or the cache is down.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard.health.checks import health_report


def _with_details(request: HttpRequest) -> bool:
    token = settings.CACHESCOPE_HEALTH_TOKEN
    sent = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


@require_GET
@login_not_required
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The report; details with the health token."""
    report = health_report()
    details = _with_details(request)
    checks = {
        check.name: (
            {
                "state": check.state,
                "ms": check.milliseconds,
                **({"error": check.error} if check.error else {}),
            }
            if details
            else check.state
        )
        for check in report.checks
    }
    return JsonResponse(
        {"status": report.status, "checks": checks}, status=503 if report.status == "down" else 200
    )
