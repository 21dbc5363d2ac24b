from typing import Any

def hash_units(
    array: bytes,
    tiers: bytes,
    roles: bytes,
    starts: bytes,
    chain: bytes,
    mixes: list[tuple[int, bytes]],
    /,
) -> tuple[list[int], list[str], list[str]]: ...
def chain_units(
    digests: bytes,
    tiers: bytes,
    roles: bytes,
    starts: bytes,
    chain: bytes,
    mixes: list[tuple[int, bytes]],
    /,
) -> list[str]: ...
def shared_prefix(old: list[Any], new: list[Any], /) -> int: ...
def rolling_hashes(items: list[str], /) -> list[int]: ...
