from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from projections.formats.storable import MAX_JSON_DEPTH, decode_storable, nesting

texts = st.text(alphabet=st.sampled_from('ab[]{}"\\\n,: é'), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@given(values, st.booleans())
def test_nesting_read_off_the_bytes_is_the_values_depth(value: Any, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only, indent=None).encode("utf-8")
    assert nesting(raw) == depth(value)


def test_brackets_side_by_side_or_inside_strings_are_not_depth() -> None:
    wide = {"messages": [{"content": [{"text": "[{" * 200}]} for _ in range(500)]}
    assert decode_storable(json.dumps(wide).encode()).value == wide
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    text_of_brackets = json.dumps({"t": deep})
    assert decode_storable(text_of_brackets.encode()).value == {"t": deep}
