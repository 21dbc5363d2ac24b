"""The terms of art the pages use, each explained once: on the glossary page and where it appears.

A page names a term with ``{% term "wire allows" %}``, which links it to its entry here and carries
the one-line sense as a tooltip, so the page and the glossary cannot say two different things.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.text import slugify

from projections.cache.predict.materiality import MATERIAL_SHARE, MATERIAL_TOKENS
from projections.money import COST_MEANING, MISS_COST_MEANING, SAVING_MEANING


@dataclass(frozen=True)
class Term:
    name: str
    short: str
    """One line, shown as the tooltip where the term appears."""
    more: str = ""
    """What the glossary page adds: where the figure comes from, what to do about it."""

    @property
    def slug(self) -> str:
        return slugify(self.name)


TERMS: tuple[Term, ...] = (
    Term(
        "prompt cache",
        "The provider's store of prompt prefixes it has already processed; a request that starts "
        "with one is billed about a tenth for those tokens.",
        "Anthropic caches up to each cache_control marker a request carries; OpenAI, Gemini and "
        "DeepSeek cache automatically. An entry lives for minutes (5 min or 1 h on Anthropic) after "
        "its last use.",
    ),
    Term(
        "cache read",
        "Prompt tokens the provider served from its cache, billed at the cache-read price.",
    ),
    Term(
        "cache write",
        "Prompt tokens the provider stored in its cache on this request, billed above the input price "
        "(1.25x for 5 minutes, 2x for an hour on Anthropic).",
    ),
    Term(
        "uncached",
        "Prompt tokens neither read from nor written to the cache, billed at the input price.",
    ),
    Term(
        "cost",
        COST_MEANING,
        "Priced from the model's row of the price table (Prices page), at the rates the provider "
        "publishes: on Anthropic a 5-minute write costs 1.25x the input price, a 1-hour write 2x, a "
        "read 0.1x. A model without a price has no cost rather than a cost of $0.",
    ),
    Term(
        "miss cost",
        MISS_COST_MEANING,
        "The missed tokens are those the previous request of the lineage had read or written and this "
        "one did not read; they sit right after what it read, so they count against its 1-hour writes "
        "first, then its 5-minute writes, then its uncached input. The same figure prices a warning's "
        "stake: a missed 5-minute write at 1.25x input less the read, never at the input rate.",
    ),
    Term(
        "saving",
        SAVING_MEANING,
        "Each what-if scenario (a stable prefix, the 1-hour TTL, a rolling breakpoint, no attribution "
        "block, a stable prompt_cache_key, extended retention, and the cheapest combination) replays "
        "the session's requests with one change; a scenario the data cannot support (a transcript "
        "without request bodies) says so and why instead of a figure. manage.py whatif prints them.",
    ),
    Term(
        "hit rate",
        "Cache-read tokens over all prompt tokens, over the requests whose provider reported usage.",
        "Requests without reported usage are left out rather than counted as misses, so a session of "
        "requests that reported nothing has no hit rate (—), not 0%.",
    ),
    Term(
        "marker",
        "A cache breakpoint in a request: a block carrying cache_control (Anthropic) or "
        "prompt_cache_breakpoint (OpenAI), up to which the provider caches the prefix.",
        "Each marker is shown with its identity (where it sits) and the hash of the prefix up to it as "
        "sent. The next request reads from the cache only up to a marker whose prefix hash it repeats.",
    ),
    Term(
        "breakpoint",
        "The same as a marker: the point up to which a prefix is cached.",
    ),
    Term(
        "prefix hash",
        "A hash of every byte the provider sees up to a marker, computed as the provider renders the "
        "request (tools, then system, then messages).",
    ),
    Term(
        "render record",
        "For one request: each marker's identity and prefix hash as sent, the record the next request "
        "is compared with.",
    ),
    Term(
        "first change",
        "The first block of a request that differs from the previous request of its lineage, with its "
        "tier (tools, system, messages) and cause (edited, removed, inserted, reordered).",
        "Everything after the first change is billed again, whatever follows; it is the place to fix.",
    ),
    Term(
        "block address",
        "Where a block sits in a request, written tier:index, e.g. messages:#5.0 is the first content "
        "block of the sixth message; tools:#2 the third tool.",
    ),
    Term(
        "lineage",
        "The thread of requests one conversation makes: each request continues the earlier one whose "
        "messages it extends.",
        "Side calls (titles, summaries) and subagents form lineages of their own, so a request is "
        "compared with the previous request of its own lineage, not with whatever came just before.",
    ),
    Term(
        "credited",
        "What the client's own cache model counted on reading from the cache for this request.",
    ),
    Term(
        "wire allows",
        "The most the provider could have read from its cache, from the bytes sent: the prefix up to "
        "the last kept, reachable marker before the first change.",
    ),
    Term(
        "reported",
        "What the provider's usage said it read from and wrote to the cache.",
        "When credited, wire allows and reported disagree, one of the three is wrong: the self-check "
        "warnings say which.",
    ),
    Term(
        "predicted read",
        "What Cachescope expects the provider to read, from the render records and the provider's "
        "rules (minimum cacheable length, lookback, time to live).",
    ),
    Term(
        "material miss",
        f"A request that processed again at least {MATERIAL_TOKENS:,} prompt tokens, and more than "
        f"{MATERIAL_SHARE:.0%} of its prompt, that its lineage had already sent: a miss that costs "
        "money, not rounding.",
    ),
    Term(
        "miss label",
        "The reason Cachescope gives a request's cache miss; each label is listed below with what it means.",
    ),
    Term(
        "wasted write",
        "Tokens written to the cache and never read back before the entry expired.",
        "Counted per session from each write and the next request of its lineage: a write that request "
        "did not read in time, or any write of a lineage's last request. Not the same as re-processed "
        "tokens, which count what a request failed to read, written or not.",
    ),
    Term(
        "re-written",
        "Tokens written to the cache again after an earlier request had already cached them: the cost "
        "of an expired entry or a broken prefix.",
    ),
    Term(
        "re-processed",
        "Prompt tokens the previous request of the lineage had cached that this request did not read, "
        "and so sent through the model again, as uncached input or as a new cache write.",
        "Counted per request on the requests list, which filters and sorts on it. The part of them "
        "written again is the re-written tokens; a wasted write is another figure: tokens written and "
        "never read back.",
    ),
    Term(
        "provider diagnosis",
        "The provider's own reason for a miss, where it gives one (Anthropic's cache_miss_reason), "
        "shown beside Cachescope's first change.",
    ),
    Term(
        "host note",
        "A line an agent host logged about its own cache; kept on the session page, not a problem in itself.",
    ),
    Term(
        "severity",
        "How urgently a warning asks for a look: error, warning or info, decided by its kind.",
    ),
    Term(
        "projection",
        "A view of a session's state folded from its event log, such as the context breakdown; each "
        "key has versioned definitions.",
    ),
    Term(
        "state version",
        "A numbered definition of a projection's state; a new version changes what is kept or how it "
        "is counted.",
    ),
    Term(
        "re-fold",
        "Folding every stored log under an old and a new state version, comparing the views after every "
        "event, and moving the key's rows to the new version.",
    ),
    Term(
        "compaction",
        "An agent replacing part of its conversation with a summary to free context; it changes the "
        "prefix, so the next request writes the cache again.",
        "It takes two requests: the summarising call (lineage compaction), which re-sends the whole "
        "history and reads the main thread's cache only if it keeps the main thread's system prompt "
        "and tools, and the restart (label compacted), which reads the tools and system prompt and "
        "writes the summary.",
    ),
    Term(
        "attribution block",
        "Claude Code's first system block, x-anthropic-billing-header: cc_version=…; cc_entrypoint=…; "
        "cch=…; whose value changes per session and per request.",
        "Where a cache keys on it, everything after it is written again: a new session or subagent "
        "reads only the tools, and some third-party endpoints read nothing. "
        "CLAUDE_CODE_ATTRIBUTION_HEADER=0, or a gateway that strips it, removes it; an endpoint that "
        "reads on past a changed block ignores it.",
    ),
)

TERMS_BY_NAME: dict[str, Term] = {term.name: term for term in TERMS}


def term_named(name: str) -> Term:
    """The entry for ``name``; an unknown name is a mistake in a template, so it raises."""
    try:
        return TERMS_BY_NAME[name.lower()]
    except KeyError:
        raise KeyError(f"no glossary entry {name!r}; add it to dashboard/web/glossary.py") from None
