from __future__ import annotations

from projections.folds.cache_metrics import CacheMetrics, CacheMetricsV1, tools_fingerprint
from projections.folds.fold import fold, resume, to_row
from projections.synthetic import LogBuilder

METRICS = CacheMetricsV1()


def view(log: LogBuilder) -> CacheMetrics:
    return METRICS.view(fold(METRICS, log.events))


def test_nothing_reported_gives_unknown_rates() -> None:
    log = LogBuilder()
    log.assistant("a")
    assert view(log) == CacheMetrics(0, 0, None, 0, 0, 0, None)


def test_usage_without_cache_buckets_has_an_unknown_hit_rate() -> None:
    log = LogBuilder()
    log.assistant("a", usage={"inputTokens": 100, "outputTokens": 5})
    assert view(log).requests == 1
    assert view(log).hit_rate is None


def test_requests_hits_and_hit_rate_over_all_requests() -> None:
    log = LogBuilder()
    log.assistant("a", usage={"inputTokens": 100, "cacheReadTokens": 0, "cacheWriteTokens": 900}, step=0)
    log.assistant("b", usage={"inputTokens": 50, "cacheReadTokens": 900, "cacheWriteTokens": 50}, step=1)
    metrics = view(log)
    assert (metrics.requests, metrics.hits) == (2, 1)
    assert metrics.hit_rate == 900 / 2_000


def test_a_second_report_for_the_same_step_replaces_the_first() -> None:
    log = LogBuilder()
    log.assistant("a", usage={"inputTokens": 100, "cacheReadTokens": 0}, step=0)
    log.assistant("a", usage={"inputTokens": 10, "cacheReadTokens": 90}, step=0)
    metrics = view(log)
    assert (metrics.requests, metrics.hits, metrics.hit_rate) == (1, 1, 0.9)


def test_write_amplification_is_writes_over_reads() -> None:
    log = LogBuilder()
    log.assistant("a", usage={"cacheReadTokens": 400, "cacheWriteTokens": 1_000}, step=0)
    assert view(log).write_amplification == 2.5


def test_write_amplification_is_unknown_while_nothing_was_read() -> None:
    log = LogBuilder()
    log.assistant("a", usage={"cacheReadTokens": 0, "cacheWriteTokens": 1_000})
    assert view(log).write_amplification is None


def test_a_compaction_counts_as_a_reset() -> None:
    log = LogBuilder()
    log.user("a")
    log.user("b")
    log.compact(0, 1, "summary")
    assert view(log).resets_compaction == 1


def test_a_model_change_counts_as_a_reset_but_the_first_model_does_not() -> None:
    log = LogBuilder()
    log.header(model="m1")
    log.event("request/context", {"provider": "p", "model": "m1"})
    log.header(model="m1")
    assert view(log).resets_model == 0
    log.event("request/context", {"provider": "p", "model": "m2"})
    log.header(model="m2")
    assert view(log).resets_model == 1


def test_a_provider_change_with_the_same_model_name_is_a_model_change() -> None:
    log = LogBuilder()
    log.header(model="m", provider="a")
    log.header(model="m", provider="b")
    assert view(log).resets_model == 1


def test_a_tool_change_counts_as_a_reset() -> None:
    log = LogBuilder()
    log.header(tools=[{"name": "bash"}])
    log.header(tools=[{"name": "bash"}])
    log.header()  # a header without tools says nothing about them
    assert view(log).resets_tools == 0
    log.header(tools=[{"name": "bash"}, {"name": "read"}])
    assert view(log).resets_tools == 1


def test_tools_fingerprint_ignores_key_order() -> None:
    assert tools_fingerprint([{"a": 1, "b": 2}]) == tools_fingerprint([{"b": 2, "a": 1}])
    assert tools_fingerprint([{"a": 1}]) != tools_fingerprint([{"a": 2}])


def test_view_serializes_to_camel_case_json() -> None:
    assert CacheMetrics(2, 1, 0.5, 1, 0, 2, None).to_json() == {
        "requests": 2,
        "hits": 1,
        "hitRate": 0.5,
        "resets": {"compaction": 1, "model": 0, "tools": 2},
        "writeAmplification": None,
    }


def test_state_survives_a_row_round_trip() -> None:
    log = LogBuilder()
    log.header(model="m1", tools=[{"name": "bash"}])
    log.assistant("a", usage={"inputTokens": 100, "cacheReadTokens": 0}, step=0)
    row = to_row(METRICS, fold(METRICS, log.events), seq=1)
    log.assistant("a", usage={"inputTokens": 10, "cacheReadTokens": 90}, step=0)
    log.header(model="m2", tools=[{"name": "read"}])
    state, _ = resume(METRICS, row, log.events)
    assert METRICS.view(state) == view(log)
