from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from projections.folds.append_vector import AppendVector


def test_append_returns_a_longer_vector_and_keeps_the_original() -> None:
    first = AppendVector([1, 2])
    second = first.append(3)
    assert list(first) == [1, 2]
    assert list(second) == [1, 2, 3]


def test_appending_twice_to_one_vector_branches_without_interference() -> None:
    base = AppendVector([1])
    left = base.append(2)
    right = base.append(3)
    assert (list(base), list(left), list(right)) == ([1], [1, 2], [1, 3])


def test_splice_replaces_an_inclusive_run() -> None:
    vector = AppendVector([1, 2, 3, 4])
    assert list(vector.splice(1, 2, [9])) == [1, 9, 4]
    assert list(vector) == [1, 2, 3, 4]


def test_indexing_stops_at_the_vector_length() -> None:
    base = AppendVector([1])
    base.append(2)
    assert base[-1] == 1
    assert base[0:5] == [1]
    with pytest.raises(IndexError):
        base[1]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers())))
def test_every_version_keeps_its_own_items(steps: list[tuple[int, int]]) -> None:
    versions = [AppendVector[int]()]
    expected: list[list[int]] = [[]]
    for parent, item in steps:
        index = parent % len(versions)
        versions.append(versions[index].append(item))
        expected.append([*expected[index], item])
    assert [list(version) for version in versions] == expected
    assert versions == [AppendVector(items) for items in expected]
