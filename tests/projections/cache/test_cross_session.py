"""Reads across sessions: a prefix another session of the same source wrote, named by its writer."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from projections.cache.cross_session import PrefixIndex, WriterRef, session_writes, transcript_writes
from projections.cache.session_analysis import analyse_records
from projections.normalized import RequestRecord
from tests.projections.cache.builders import (
    SONNET,
    T0,
    anthropic_usage,
    body,
    conversation,
    record,
)


def call(key: str, ordinal: int, seconds: float, read: int, write: int, model: str = SONNET) -> RequestRecord:
    return RequestRecord(
        key=key,
        ordinal=ordinal,
        lineage="main",
        provider="anthropic",
        platform="anthropic",
        api="messages",
        model=model,
        started_at=T0 + timedelta(seconds=seconds),
        usage=anthropic_usage(30, read, write),
    )


def main_session() -> list[RequestRecord]:
    return [call("m0", 0, 0, 0, 20_000), call("m1", 1, 60, 20_000, 4_000), call("m2", 2, 120, 24_000, 1_000)]


def test_a_compaction_call_reads_what_the_main_session_left_cached_and_names_its_writer() -> None:
    main = main_session()
    foreign = PrefixIndex.of(session_writes("main-session", main, analyse_records(main).results))
    compaction = [call("c0", 0, 150, 25_000, 2_000), call("c1", 1, 160, 27_000, 100)]

    first = analyse_records(compaction, foreign=foreign).results[0]

    assert first.predicted_read == 25_000
    assert first.data["rule"] == "cross-session"
    assert first.data["read_from"] == {"session": "main-session", "key": "m2", "ordinal": 2}
    assert "request #2 of another session" in str(first.data["label_detail"])
    assert first.label == ""
    # Alone, the same call is a first call nothing is known about.
    assert analyse_records(compaction).results[0].predicted_read is None


def test_a_write_past_its_ttl_or_of_another_model_is_not_read_across_sessions() -> None:
    writer = WriterRef("other", "w0", 0)
    index = PrefixIndex.of(transcript_writes(writer, SONNET, T0, 0, 25_000, 0))

    assert index.size_read(SONNET, 25_000, T0 + timedelta(minutes=4)) is not None
    assert index.size_read(SONNET, 25_000, T0 + timedelta(minutes=6)) is None  # the 5-minute entry expired
    assert index.size_read("claude-opus-4-6", 25_000, T0 + timedelta(minutes=1)) is None
    assert index.size_read(SONNET, 24_999, T0 + timedelta(minutes=1)) is None
    assert index.size_read(SONNET, 25_000, T0 - timedelta(seconds=1)) is None  # not written yet


def test_a_request_with_a_body_reads_a_prefix_another_session_wrote() -> None:
    history = conversation(20)
    parent = [record("p0", 0, body(history, marks=(19,)), usage=anthropic_usage(10, 0, 9_000))]
    written = session_writes("42", parent, analyse_records(parent).results)
    # A subagent of the same workspace sends the same prefix a minute later and appends to it.
    child = [record("s0", 0, body([*history, *conversation(2)], marks=(21,)), minutes=1)]

    alone = analyse_records(child).results[0]
    crossed = analyse_records(child, foreign=PrefixIndex.of(written)).results[0]

    assert alone.predicted_read == 0
    assert crossed.predicted_read == max(w.tokens for w in written)
    assert crossed.data["read_from"] == {"session": "42", "key": "p0", "ordinal": 0}


def test_a_read_inside_the_session_names_its_own_writer_without_a_session() -> None:
    results = analyse_records(main_session()).results

    assert results[1].data["read_from"] == {"session": None, "key": "m0", "ordinal": 0}


def test_a_summarizer_call_of_another_lineage_reads_the_main_chain_of_its_own_session() -> None:
    summarizer = replace(call("s0", 3, 150, 25_000, 900), lineage="side")
    results = analyse_records([*main_session(), summarizer]).results

    assert results[3].predicted_read == 25_000
    assert results[3].data["rule"] == "cross-lineage"
    assert results[3].data["read_from"] == {"session": None, "key": "m2", "ordinal": 2}


def test_a_first_call_that_reads_nothing_another_lineage_wrote_stays_unpredicted() -> None:
    stranger = replace(call("s0", 3, 150, 12_345, 900), lineage="side")

    assert analyse_records([*main_session(), stranger]).results[3].predicted_read is None


def test_one_index_of_a_run_serves_each_session_without_its_own_writes() -> None:
    index = PrefixIndex.of(
        [
            *transcript_writes(WriterRef("a", "a0", 0), SONNET, T0, 0, 25_000, 0),
            *transcript_writes(WriterRef("b", "b0", 0), SONNET, T0, 0, 30_000, 0),
        ]
    )
    later = T0 + timedelta(minutes=1)

    assert index.for_reader("a").size_read(SONNET, 25_000, later) is None
    found = index.for_reader("b").size_read(SONNET, 25_000, later)
    assert found is not None
    assert found.writer.key == "a0"


def test_another_sessions_expired_entry_is_named_by_its_request_and_session() -> None:
    history = conversation(20)
    parent = [record("p0", 0, body(history, marks=(19,)), usage=anthropic_usage(10, 0, 9_000))]
    written = PrefixIndex.of(session_writes("42", parent, analyse_records(parent).results))
    late = [record("s0", 0, body([*history, *conversation(2)], marks=(21,)), minutes=7)]

    result = analyse_records(late, foreign=written).results[0]

    assert result.predicted_read == 0
    assert result.label == "ttl-expired"
    assert "request p0 of session 42" in str(result.data["label_detail"])
    assert result.data["read_from"] is None
