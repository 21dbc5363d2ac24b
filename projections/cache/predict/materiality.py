"""When a cache miss matters: the materiality rule (DESIGN §7).

Its own module, free of the analysis engine, because the glossary quotes its thresholds on every
page that explains a badge.
"""

from __future__ import annotations

MATERIAL_SHARE = 0.05
MATERIAL_TOKENS = 2_000
"""A miss is material when more than 5 % and at least 2,000 tokens were re-processed (DESIGN §7)."""


def is_material(reprocessed: int, prompt_total: int) -> bool:
    """More than 5 % of the prompt and at least 2,000 tokens re-processed."""
    return reprocessed >= MATERIAL_TOKENS and reprocessed > MATERIAL_SHARE * prompt_total
