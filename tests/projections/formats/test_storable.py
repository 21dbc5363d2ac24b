from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.formats.reading.storable import MAX_JSON_DEPTH, TooDeep, decode_storable, deeper_than

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


@given(values, st.integers(min_value=0, max_value=6))
def test_a_value_is_deeper_than_a_limit_exactly_when_its_depth_exceeds_it(value: Any, limit: int) -> None:
    assert deeper_than(value, limit) == (depth(value) > limit)


def test_a_line_nested_past_the_limit_is_refused_and_one_at_it_is_read() -> None:
    at_limit = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert decode_storable(at_limit.encode()).value is not None
    with pytest.raises(TooDeep):
        decode_storable(("[" + at_limit + "]").encode())
    with pytest.raises(TooDeep):
        decode_storable(('{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)).encode())


def test_brackets_side_by_side_or_inside_strings_are_not_depth() -> None:
    wide = {"messages": [{"content": [{"text": "[{" * 200}]} for _ in range(500)]}
    assert decode_storable(json.dumps(wide).encode()).value == wide
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    text_of_brackets = json.dumps({"t": deep})
    assert decode_storable(text_of_brackets.encode()).value == {"t": deep}


# Text a database can hold (no NUL, no lone surrogate), which is stored as it was read.
storable_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | storable_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(storable_text, inner, max_size=4),
    max_leaves=30,
)


@given(json_values)
def test_a_line_decodes_to_what_the_standard_library_reads(value: Any) -> None:
    raw = json.dumps(value).encode()
    decoded = decode_storable(raw).value
    assert decoded == json.loads(raw)
    assert json.dumps(decoded) == json.dumps(json.loads(raw))  # same types: an int stays an int


def test_an_integer_past_64_bits_stays_an_exact_integer() -> None:
    big = 2**64 * 3 + 1
    assert decode_storable(b'{"n": %d, "m": -%d}' % (big, big)).value == {"n": big, "m": -big}


def test_a_byte_order_mark_is_read_past_as_before() -> None:
    assert decode_storable(b'\xef\xbb\xbf{"a": 1}').value == {"a": 1}
