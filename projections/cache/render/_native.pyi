def hash_units(
    array: bytes,
    tiers: bytes,
    roles: bytes,
    starts: bytes,
    chain: bytes,
    mixes: list[tuple[int, bytes]],
    /,
) -> tuple[list[int], list[str], list[str]]: ...
