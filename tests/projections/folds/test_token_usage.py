from __future__ import annotations

from dataclasses import replace

from projections.folds.fold import fold, resume, to_row
from projections.folds.token_usage import TokenUsage, TokenUsageV1
from projections.normalized import JSON
from projections.synthetic import LogBuilder

USAGE = TokenUsageV1()


def usage(
    uncached: int = 0, read: int = 0, write: int = 0, write_1h: int = 0, output: int = 0
) -> dict[str, JSON]:
    return {
        "inputTokens": uncached,
        "cacheReadTokens": read,
        "cacheWriteTokens": write,
        "cacheWrite1hTokens": write_1h,
        "outputTokens": output,
    }


def test_no_report_gives_zero_totals_and_no_reports() -> None:
    log = LogBuilder()
    log.assistant("no usage")
    assert USAGE.view(fold(USAGE, log.events)) == TokenUsage(0, 0, 0, 0, 0, reports=0)


def test_reports_of_different_steps_add_up() -> None:
    log = LogBuilder()
    log.assistant("a", usage=usage(10, 100, 20, 5, 7), turn=1, step=0)
    log.assistant("b", usage=usage(1, 130, 3, 0, 9), turn=1, step=1)
    assert USAGE.view(fold(USAGE, log.events)) == TokenUsage(11, 230, 23, 5, 16, reports=2)


def test_a_second_report_for_the_same_step_replaces_the_first() -> None:
    log = LogBuilder()
    log.assistant("a", usage=usage(10, 100, 20, 0, 7), turn=1, step=0)
    log.assistant("a", usage=usage(10, 100, 20, 0, 50), turn=1, step=0)
    assert USAGE.view(fold(USAGE, log.events)) == TokenUsage(10, 100, 20, 0, 50, reports=1)


def test_the_same_step_number_in_another_turn_is_another_report() -> None:
    log = LogBuilder()
    log.assistant("a", usage=usage(output=1), turn=1, step=0)
    log.assistant("b", usage=usage(output=1), turn=2, step=0)
    assert USAGE.view(fold(USAGE, log.events)).reports == 2


def test_compaction_summary_usage_is_counted() -> None:
    log = LogBuilder()
    log.user("a")
    summary = log.meter("compaction/summary", 0, 0)
    log.events[-1] = replace(summary, data={**summary.data, "usage": usage(500, output=80)})
    assert USAGE.view(fold(USAGE, log.events)) == TokenUsage(500, 0, 0, 0, 80, reports=1)


def test_view_serializes_to_camel_case_json() -> None:
    assert TokenUsage(1, 2, 3, 1, 4, reports=1).to_json() == {
        "inputTokens": 1,
        "cacheReadTokens": 2,
        "cacheWriteTokens": 3,
        "cacheWrite1hTokens": 1,
        "outputTokens": 4,
        "reports": 1,
    }
    assert TokenUsage(1, 2, 3, 1, 4, reports=1).prompt_total == 6


def test_a_resumed_state_still_replaces_the_latest_report() -> None:
    log = LogBuilder()
    log.assistant("a", usage=usage(10, output=7), turn=1, step=0)
    row = to_row(USAGE, fold(USAGE, log.events), seq=0)
    log.assistant("a", usage=usage(10, output=9), turn=1, step=0)
    state, _ = resume(USAGE, row, log.events)
    assert USAGE.view(state) == TokenUsage(10, 0, 0, 0, 9, reports=1)
