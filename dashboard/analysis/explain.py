"""``manage.py explain``'s analysis of a log file: the engine's session analysis and each request's
verdict, read straight from the file without storing anything (only the price table is read, for
each request's cost and miss cost)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path

from django.utils import timezone

from projections.cache.cross_session import PrefixIndex, session_writes
from projections.cache.explain.verdict import Verdict, verdict
from projections.cache.render.render_record import markers_sent
from projections.cache.results import RecordsAnalysis, RequestResult
from projections.cache.session_analysis import CLIENT_RECORD_TYPES, analyse_records
from projections.cache.transcript_analysis import is_boundary
from projections.cache.whatif.replay import reported_tokens
from projections.cache.whatif.results import usd
from projections.formats import read_sessions
from projections.formats.reading.times import plausible_times
from projections.money import Price, Tokens, miss_cost, price_match, usage_cost
from projections.normalized import JSON, EventRecord, LineError, RequestRecord


@dataclass(slots=True)
class FileSession:
    """One session of a log file and its analysis, with the bad lines met while reading it."""

    external_id: str
    analysis: RecordsAnalysis
    errors: list[LineError]
    usage: dict[str, tuple[str, Tokens]] = field(default_factory=dict)
    """Each request's model and reported usage, by key: what its cost is figured from."""


def file_analyse(*, path: Path, format: str | None = None) -> list[FileSession]:
    """Analyse every session of a log file (or folder) as read, without storing anything.

    The sessions of one run share the provider's cache: each is analysed with what the others
    wrote (see :mod:`projections.cache.cross_session`), so a compaction call or a subagent read
    from the main session's prefix is predicted and its writer named.
    """
    read: list[tuple[str, list[RequestRecord], list[EventRecord], list[LineError]]] = []
    now = timezone.now()
    for found in read_sessions(path, format=format):
        # The times ingest would keep, so the verdicts agree with the stored session's.
        imported = plausible_times(found, now=now)
        records: list[RequestRecord] = []
        events: list[EventRecord] = []
        errors: list[LineError] = []
        keys: set[str] = set()
        for item in imported.items:
            if isinstance(item, RequestRecord):
                if item.key not in keys:  # a repeated key is one request, as ingest stores it
                    keys.add(item.key)
                    records.append(item)
            elif isinstance(item, EventRecord):
                if item.type in CLIENT_RECORD_TYPES or is_boundary(item):
                    events.append(item)
            else:
                errors.append(item)
        if imported.fatal:
            errors.append(LineError(imported.path, None, "session", imported.fatal))
        # Ordinals count the session's requests in file order, as ingest numbers them.
        records = [replace(record, ordinal=i) for i, record in enumerate(records)]
        read.append((imported.external_id, records, events, errors))
    alone = [analyse_records(records, events) for _, records, events, _ in read]
    if len(read) < 2:
        return [
            FileSession(name, analysis, errors, _usage(records))
            for (name, records, _, errors), analysis in zip(read, alone, strict=True)
        ]
    written = PrefixIndex.of(
        write
        for (name, records, _, _), analysis in zip(read, alone, strict=True)
        for write in session_writes(name, records, analysis.results)
    )
    return [
        FileSession(
            name, analyse_records(records, events, foreign=written.for_reader(name)), errors, _usage(records)
        )
        for name, records, events, errors in read
    ]


def _usage(records: Sequence[RequestRecord]) -> dict[str, tuple[str, Tokens]]:
    return {record.key: (record.model, reported_tokens(record.usage)) for record in records}


@dataclass(frozen=True, slots=True)
class RequestMoney:
    """A request's cost and miss cost at list price (:mod:`projections.money`); ``None`` unpriced."""

    cost: Decimal | None
    miss_cost: Decimal | None


def request_money(session: FileSession, prices: Sequence[Price]) -> dict[str, RequestMoney]:
    """Each request's cost (its reported usage at its model's list price) and miss cost (0 where it
    missed nothing, a cold start included), by key; the previous request of its lineage is the one
    its analysis compared it with."""
    money: dict[str, RequestMoney] = {}
    usage = session.usage
    for result in session.analysis.results:
        model, tokens = usage.get(result.key, ("", Tokens()))
        price = price_match(model=model, prices=prices)
        if price is None:
            money[result.key] = RequestMoney(None, None)
            continue
        previous = _previous_key(result.data)
        before = usage[previous][1] if previous in usage else None
        money[result.key] = RequestMoney(
            usage_cost(tokens=tokens, price=price), miss_cost(before, tokens, price)
        )
    return money


def _previous_key(data: Mapping[str, JSON]) -> str | None:
    previous = data.get("previous")
    key = previous.get("key") if isinstance(previous, dict) else None
    return key if isinstance(key, str) else None


def result_verdict(result: RequestResult) -> Verdict:
    """The verdict the request page gives the same request (one engine function for both)."""
    return verdict(result.data, has_body=result.has_body)


def explain_json(result: RequestResult, money: RequestMoney | None = None) -> dict[str, JSON]:
    """The object ``explain --json`` prints for a request: where it sits, the markers it sent, the
    previous request's markers and what became of them, its verdict (first change, figures, label,
    detail, remedy, material, warnings, the provider's own diagnosis and the client version), and
    with ``money`` its ``cost_usd`` and ``miss_cost_usd`` as JSON numbers (null for a model without
    a price)."""
    data = result.data
    said = result_verdict(result).to_json()
    markers = [
        {k: m[k] for k in ("ordinal", "position", "tier", "prefix_tokens", "status")} for m in data["markers"]
    ]
    change = data["first_change"]
    short = None if change is None else {k: change[k] for k in ("position", "tier", "cause")}
    return {
        "number": data["ordinal"] + 1,  # the request's place in its session as the pages count, from 1
        "lineage": data["lineage"],
        "model": data["model"],
        "markers_sent": markers_sent(data, has_body=result.has_body),
        "markers": markers,
        "read_from": data.get("read_from"),
        "first_change": short,
        "figures": said["figures"],
        "label": said["label"],
        "detail": said["detail"],
        "remedy": said["remedy"],
        "material": said["material"],
        "badge": said["badge"],
        "meaning": said["meaning"],
        "warnings": said["warnings"],
        "provider_diagnosis": said["provider_diagnosis"],
        "client_version": said["client_version"],
        "cost_usd": usd(money.cost) if money is not None else None,
        "miss_cost_usd": usd(money.miss_cost) if money is not None else None,
    }
