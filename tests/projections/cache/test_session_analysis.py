"""A session whose bodies are kept outside its records (as the store keeps them) is analysed as if the
records carried them, rendering each request in turn and holding a few renderings at a time."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import fields, replace
from typing import Any

from projections.cache.analysis import KEPT_RENDERINGS
from projections.cache.render.rebuild import StoredRequestError
from projections.cache.render.rendered_request import RenderedRequest
from projections.cache.render.rendering import render_request
from projections.cache.results import RecordsAnalysis
from projections.cache.session_analysis import analyse_records
from projections.normalized import RequestRecord
from tests.projections.cache.builders import anthropic_usage, body, conversation, record, tools


class _Tracked(RenderedRequest):
    """A rendering a weak set can hold (the engine's own class has slots only, and no hash)."""

    __hash__ = object.__hash__


class KeptAside:
    """The bodies of ``records`` kept aside and rendered when the analysis asks, counting the renders
    and the most renderings alive at once; the keys in ``broken`` do not rebuild."""

    def __init__(self, records: Sequence[RequestRecord], *, broken: Sequence[str] = ()) -> None:
        self._records = {r.key: r for r in records}
        self._broken = set(broken)
        self._alive: weakref.WeakSet[RenderedRequest] = weakref.WeakSet()
        self.renders: list[str] = []
        self.most_alive = 0

    def has_body(self, record: RequestRecord) -> bool:
        return self._records[record.key].body is not None

    def render(self, record: RequestRecord) -> RenderedRequest:
        if record.key in self._broken:
            raise StoredRequestError(f"request {record.ordinal}: block abc is not stored")
        full = self._records[record.key]
        assert full.body is not None
        plain = render_request(full.provider, full.api, full.body, usage=full.usage)
        rendered = _Tracked(**{f.name: getattr(plain, f.name) for f in fields(plain)})
        self.renders.append(record.key)
        self._alive.add(rendered)
        self.most_alive = max(self.most_alive, len(self._alive))
        return rendered


def without_bodies(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    return [replace(r, body=None) for r in records]


def outcome(analysis: RecordsAnalysis) -> tuple[list[Any], list[Any]]:
    results = [(r.key, r.data, r.label, r.predicted_read, r.has_body) for r in analysis.results]
    return results, analysis.findings


def growing(calls: int, *, start: int = 0) -> list[RequestRecord]:
    """A conversation that resends its history: call ``i`` sends ``2 i + 2`` messages."""
    return [
        record(
            f"r{i}",
            start + i,
            body(conversation(2 * i + 2, chars=300), marks=(2 * i + 1,)),
            minutes=start + i,
            usage=anthropic_usage(10, 2_000 + 150 * i, 150),
        )
        for i in range(calls)
    ]


def test_bodies_kept_aside_give_the_analysis_of_records_that_carry_them() -> None:
    # A main-role probe without tools first: the chain with tools after it is named main, the probe's
    # side, only once the second chain is seen.
    probe = record("probe", 0, body(conversation(1), tool_defs=[]), usage=anthropic_usage(10, 0, 0))
    calls = growing(20, start=1)
    # A fork of a request long past (r3 sends 8 messages): it is compared with r3, rendered again.
    forked = [*conversation(8, chars=300), {"role": "user", "content": [{"type": "text", "text": "redo"}]}]
    fork = record("fork", 21, body(forked, marks=(8,)), minutes=21, usage=anthropic_usage(10, 900, 50))
    records = [probe, *calls, fork]
    aside = KeptAside(records)

    streamed = analyse_records(without_bodies(records), bodies=aside)

    assert outcome(streamed) == outcome(analyse_records(records))
    lineages = {r.key: r.data["lineage"] for r in streamed.results}
    assert (lineages["probe"], lineages["r0"], lineages["fork"]) == ("side", "main", "main")
    assert streamed.results[-1].data["previous"] == {"ordinal": 4, "key": "r3"}
    assert aside.renders.count("r3") == 2  # once in turn, once more for the fork


def test_the_analysis_holds_a_few_renderings_however_long_the_session() -> None:
    records = growing(40)
    side = record("title", 40, body(conversation(1), tool_defs=[]), minutes=40, lineage="side")
    aside = KeptAside([*records, side])

    analysed = analyse_records(without_bodies([*records, side]), bodies=aside)

    assert len(analysed.results) == 41
    assert aside.renders == [r.key for r in records] + ["title"]  # each once: every call continues the last
    assert aside.most_alive <= KEPT_RENDERINGS + 2


def test_a_body_that_does_not_rebuild_is_analysed_from_its_usage_and_named_first() -> None:
    records = growing(4)
    aside = KeptAside(records, broken=["r2"])

    analysed = analyse_records(without_bodies(records), bodies=aside)

    first = analysed.findings[0]
    assert (first.kind, first.place, first.request_key) == ("ingest-error", "client record request 2", "r2")
    broken = analysed.results[2]
    assert (broken.has_body, broken.data["cacheability"]) == (False, None)
    assert analysed.results[3].data["previous"] == {"ordinal": 1, "key": "r1"}


def test_a_session_none_of_whose_bodies_rebuild_is_analysed_from_usage_alone() -> None:
    records = [
        record("a", 0, body(conversation(2), tool_defs=tools("Bash")), usage=anthropic_usage(10, 0, 3_000)),
        record("b", 1, body(conversation(4)), minutes=1, usage=anthropic_usage(10, 3_000, 300)),
    ]
    aside = KeptAside(records, broken=["a", "b"])

    analysed = analyse_records(without_bodies(records), bodies=aside)

    assert [(f.kind, f.request_key) for f in analysed.findings[:2]] == [
        ("ingest-error", "a"),
        ("ingest-error", "b"),
    ]
    assert all("rule" in r.data and not r.has_body for r in analysed.results)  # the transcript predictor's
