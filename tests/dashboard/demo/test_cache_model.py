from __future__ import annotations

import pytest

from dashboard.demo.cache_model import (
    FRAMING_TOKENS,
    TTL_1H,
    AnthropicCache,
    Breakpoint,
    OpenAICache,
    prefix_chain,
)


def chain(*texts: str, tokens: int = 500) -> list:  # type: ignore[type-arg]
    return prefix_chain("model", [(text, tokens) for text in texts])


def test_the_first_request_writes_through_its_last_breakpoint() -> None:
    usage = AnthropicCache().request(chain("a", "b", "c"), [Breakpoint(2)], minimum=1024, at_s=0)
    assert (usage.cache_read, usage.cache_write_5m, usage.uncached_input) == (0, 1500, FRAMING_TOKENS)


def test_a_later_request_reads_the_unchanged_prefix_and_writes_the_rest() -> None:
    cache = AnthropicCache()
    cache.request(chain("a", "b", "c"), [Breakpoint(2)], minimum=1024, at_s=0)
    usage = cache.request(chain("a", "b", "c", "d"), [Breakpoint(3)], minimum=1024, at_s=10)
    assert (usage.cache_read, usage.cache_write) == (1500, 500)


def test_a_changed_unit_breaks_the_prefix_after_it() -> None:
    cache = AnthropicCache()
    cache.request(chain("a", "b", "c"), [Breakpoint(0), Breakpoint(2)], minimum=400, at_s=0)
    usage = cache.request(chain("a", "B", "c"), [Breakpoint(0), Breakpoint(2)], minimum=400, at_s=10)
    assert (usage.cache_read, usage.cache_write) == (500, 1000)


def test_an_entry_expires_after_its_ttl_and_a_read_refreshes_it() -> None:
    cache = AnthropicCache()
    prefix = chain("a", "b", "c")
    cache.request(prefix, [Breakpoint(2)], minimum=1024, at_s=0)
    assert cache.request(prefix, [Breakpoint(2)], minimum=1024, at_s=290).cache_read == 1500
    assert cache.request(prefix, [Breakpoint(2)], minimum=1024, at_s=580).cache_read == 1500
    assert cache.request(prefix, [Breakpoint(2)], minimum=1024, at_s=1000).cache_read == 0


def test_a_prefix_below_the_minimum_is_never_written() -> None:
    cache = AnthropicCache()
    prefix = chain("a", tokens=300)
    first = cache.request(prefix, [Breakpoint(0)], minimum=2048, at_s=0)
    second = cache.request(prefix, [Breakpoint(0)], minimum=2048, at_s=1)
    assert (first.cache_write, second.cache_read, second.uncached_input) == (0, 0, 300 + FRAMING_TOKENS)


def test_one_hour_writes_are_billed_up_to_the_last_one_hour_breakpoint() -> None:
    usage = AnthropicCache().request(
        chain("a", "b", "c"), [Breakpoint(0, TTL_1H), Breakpoint(2)], minimum=100, at_s=0
    )
    assert (usage.cache_write_1h, usage.cache_write_5m) == (500, 1000)


def test_an_entry_beyond_the_lookback_window_is_not_found() -> None:
    cache = AnthropicCache()
    texts = [f"u{i}" for i in range(30)]
    cache.request(chain(*texts[:5], tokens=300), [Breakpoint(4)], minimum=1024, at_s=0)
    usage = cache.request(chain(*texts, tokens=300), [Breakpoint(29)], minimum=1024, at_s=1)
    assert usage.cache_read == 0


@pytest.mark.parametrize(("shared", "cached"), [(1000, 0), (1024, 1024), (1300, 1280), (2047, 1920)])
def test_openai_caches_the_shared_prefix_in_128_token_steps(shared: int, cached: int) -> None:
    cache = OpenAICache()
    cache.request(prefix_chain("m", [("p", shared)]), at_s=0)
    assert cache.request(prefix_chain("m", [("p", shared), ("q", 50)]), at_s=5) == cached
