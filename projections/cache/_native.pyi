from projections.cache.rendered_request import Tier
from projections.records import JSON

def hash_units(
    array: bytes,
    tiers: bytes,
    roles: bytes,
    starts: bytes,
    chain: bytes,
    mixes: list[tuple[int, bytes]],
    /,
) -> tuple[list[int], list[str], list[str]]: ...
def flatten_messages(
    messages: list[JSON],
    leading_system: bool,
    aliases: dict[str, str],
    role_tags: dict[str, int],
    lists: tuple[
        list[JSON],
        list[Tier],
        list[str],
        list[int | None],
        list[int | None],
        list[str | None],
        list[str],
        list[int],
        list[int],
    ],
    /,
) -> tuple[bytes, bytes, bytes]: ...
def lookback_groups(kinds: list[str], run_kinds: frozenset[str], /) -> list[int]: ...
def cumulative_tokens(
    chars: list[int], images: list[int], image_estimate: float, scales: list[tuple[int, int, float]], /
) -> tuple[list[int], list[int]]: ...
