"""Token estimates of a rendering's units, calibrated to the prompt total the provider reported.

A unit's estimate is its characters ÷ 4, or a flat figure for an image; with usage at hand the
estimates are scaled so the units sum to the reported prompt tokens, anchored at the last cache
breakpoint where Anthropic's usage says exactly how long the cached prefix was.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import accumulate, chain, islice, repeat
from operator import mul, sub, truediv

from projections.cache.render.rendered_request import RenderedRequest
from projections.normalized import Usage

IMAGE_TOKEN_ESTIMATE = 1_600
"""A full-size image costs about (width x height) / 750 ≈ 1,600 tokens (Anthropic vision docs);
the base64 length says nothing useful about it, and calibration corrects the total anyway."""


def token_estimates(
    chars: list[int], images: list[int], image_estimate: float = IMAGE_TOKEN_ESTIMATE
) -> list[float]:
    """Uncalibrated token estimates: characters ÷ 4, and a flat figure for each image position."""
    estimates = list(map(truediv, chars, repeat(4)))
    for i in images:
        estimates[i] = float(image_estimate)
    return estimates


def _image_positions(kinds: list[str]) -> list[int]:
    return [i for i, kind in enumerate(kinds) if kind == "image"] if "image" in kinds else []


def _estimate_sum(chars: list[int], images: list[int], start: int, end: int) -> float:
    """The sum of the estimates of units ``start:end``, from integers.

    Every estimate is a multiple of 1/4, so any float sum of them is exact and equals this one,
    whatever the order or the summation Python uses.
    """
    inside = [i for i in images if start <= i < end]
    text = sum(chars[start:end]) - sum(chars[i] for i in inside)
    return text / 4 + IMAGE_TOKEN_ESTIMATE * len(inside)


def calibrate(rendered: RenderedRequest, usage: Usage | None) -> None:
    """Set integer token counts: characters ÷ 4, scaled so the units sum to the reported total.

    For Anthropic usage the prefix through the last breakpoint is known exactly (read + write), so
    the units up to it are scaled to that figure and the rest to the uncached remainder: a prefix
    written by one request is then read back by the next at the very figure the provider reports.
    """
    chars = rendered.chars
    images = _image_positions(rendered.kinds)
    n = len(chars)
    total = usage.prompt_total if usage is not None else None
    unattributed = 0
    scales: list[Scale] = []
    if total is not None and n:
        anchor = _anchor(rendered, usage) if usage is not None else None
        if anchor is not None:
            position, through = anchor
            head = _estimate_sum(chars, images, 0, position + 1)
            tail = _estimate_sum(chars, images, position + 1, n)
            scales += _scale(0, position + 1, head, through)
            if tail > 0:
                scales += _scale(position + 1, n, tail, total - through)
            else:
                unattributed = total - through
        else:
            whole = _estimate_sum(chars, images, 0, n)
            if whole > 0:
                scales += _scale(0, n, whole, total)
            else:
                unattributed = total
    rendered.cum_tokens, rendered.tokens = cumulative_tokens(
        chars, images, float(IMAGE_TOKEN_ESTIMATE), scales
    )
    rendered.unattributed_tokens = unattributed


Scale = tuple[int, int, float]
"""Units ``start:end`` are multiplied by ``factor``."""


def _scale(start: int, end: int, current: float, target: float) -> list[Scale]:
    return [(start, end, target / current)] if current > 0 else []


def cumulative_tokens(
    chars: list[int], images: list[int], image_estimate: float, scales: list[Scale]
) -> tuple[list[int], list[int]]:
    """(cumulative, per unit) integer tokens: the estimates scaled, their running sums rounded.

    Each unit's estimate is its characters ÷ 4, or ``image_estimate`` at the ``images`` positions.
    Rounding the running sum rather than each unit keeps every prefix within half a token of its
    estimate, however long the request.
    """
    # One C-level pipeline (estimate times factor, running sum, rounded) rather than a list a step:
    # units outside every scale are multiplied by 1.0, which leaves a float as it is.
    estimates = token_estimates(chars, images, image_estimate) if images else map(truediv, chars, repeat(4))
    scaled = map(mul, estimates, _factors(scales, len(chars)))
    cum = [0]
    cum.extend(map(round, accumulate(scaled)))
    return cum, list(map(sub, islice(cum, 1, None), cum))


def _factors(scales: list[Scale], count: int) -> Iterator[float]:
    """Each unit's factor, in order: the factor of the scale that holds it, else 1.0. The scales are
    ascending and do not overlap, as :func:`calibrate` makes them."""
    parts: list[Iterator[float]] = []
    at = 0
    for start, end, factor in scales:
        parts += [repeat(1.0, start - at), repeat(factor, end - start)]
        at = end
    parts.append(repeat(1.0, count - at))
    return chain.from_iterable(parts)


def _anchor(rendered: RenderedRequest, usage: Usage) -> tuple[int, int] | None:
    if usage.convention not in ("anthropic", "dsh") or not rendered.markers:
        return None
    through = (usage.cache_read or 0) + (usage.cache_write or 0)
    if through <= 0 or usage.prompt_total is None or through > usage.prompt_total:
        return None
    return max(m.position for m in rendered.markers), through
