"""insert_rows stores exactly what the ORM's bulk insert stores: COPY on PostgreSQL, one prepared
INSERT on SQLite."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from dashboard.models import Request, RequestAnalysis, Session, Source
from dashboard.storage.copy_rows import insert_rows

pytestmark = pytest.mark.django_db

AWKWARD = {
    "text": 'a "quoted" \\ backslash, a tab\t, a newline\n, {braces}, ünïcode 🙂 and a NUL-free end',
    "nested": [{"null": None, "true": True, "number": 1.5, "big": 2**63 - 1}, [], {}],
}


def requests_of(session: Session) -> list[Request]:
    return [
        Request(
            session=session,
            ordinal=ordinal,
            key=f"req_{ordinal}",
            provider="anthropic",
            model="claude-sonnet-4-20250514",
            started_at=datetime(2026, 1, 5, 9, ordinal, 30, 123456, tzinfo=UTC),
            cache_read_tokens=None if ordinal else 12_000,
            params={"max_tokens": 4096, "note": AWKWARD["text"]},
            units=[["h", ordinal]],
            usage_raw=AWKWARD,
        )
        for ordinal in range(3)
    ]


def analyses_of(session: Session) -> list[RequestAnalysis]:
    return [
        RequestAnalysis(
            request=request,
            session=session,
            label="miss",
            cause="edit" if request.ordinal else "",
            material=bool(request.ordinal),
            credited=request.ordinal * 100,
            cost=Decimal("0.012345"),
            data={**AWKWARD, "ordinal": request.ordinal},
        )
        for request in Request.objects.filter(session=session).order_by("ordinal")
    ]


def stored(model: type[Any], session: Session) -> list[dict[str, Any]]:
    """The session's rows as the ORM reads them back, without what differs by design (ids, the
    moment a row was written)."""
    rows = model.objects.filter(session=session).order_by("pk").values()
    differ = ("id", "session_id", "request_id", "analysed_at")
    return [{k: v for k, v in row.items() if k not in differ} for row in rows]


def test_copied_rows_read_back_as_the_orm_s_own() -> None:
    source = Source.objects.create(name="laptop")
    copied = Session.objects.create(source=source, external_id="copied")
    created = Session.objects.create(source=source, external_id="created")

    insert_rows(Request, requests_of(copied))
    Request.objects.bulk_create(requests_of(created))
    assert stored(Request, copied) == stored(Request, created)
    assert Request.objects.get(session=copied, ordinal=0).usage_raw == AWKWARD

    insert_rows(RequestAnalysis, analyses_of(copied))
    RequestAnalysis.objects.bulk_create(analyses_of(created))
    assert stored(RequestAnalysis, copied) == stored(RequestAnalysis, created)
    assert len(stored(RequestAnalysis, copied)) == 3
    assert RequestAnalysis.objects.filter(session=copied, analysed_at__isnull=True).count() == 0


def test_the_rows_are_inserted_without_the_orm_s_bulk_insert(monkeypatch: pytest.MonkeyPatch) -> None:
    assert connection.vendor in ("postgresql", "sqlite")
    session = Session.objects.create(source=Source.objects.create(name="laptop"), external_id="s")

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the ORM's bulk insert ran")

    monkeypatch.setattr(QuerySet, "bulk_create", refused)
    insert_rows(Request, requests_of(session))
    assert Request.objects.filter(session=session).count() == 3


def test_a_row_that_is_not_new_is_refused_and_nothing_of_its_batch_is_kept() -> None:
    session = Session.objects.create(source=Source.objects.create(name="laptop"), external_id="s")
    insert_rows(Request, requests_of(session)[:1])
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(Request, requests_of(session))
    assert Request.objects.filter(session=session).count() == 1
