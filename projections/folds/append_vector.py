"""An immutable sequence whose append is O(1) amortised, for fold states that grow with the log.

A fold keeps every intermediate state reachable (a projection row, the previous view in a re-fold
comparison), so states must never change once returned. Copying a tuple on every append would make
a fold quadratic; instead, vectors share one backing list and each remembers its own length. The
first append to the newest vector extends the shared list in place, which no older vector can see
past its length; appending to an older vector (a branch) copies its prefix first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class AppendVector(Sequence[T], Generic[T]):
    """An immutable sequence of ``T`` with cheap :meth:`append`."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: list[T] = list(items)
        self._length = len(self._items)

    @classmethod
    def _sharing(cls, items: list[T], length: int) -> AppendVector[T]:
        vector: AppendVector[T] = cls.__new__(cls)
        vector._items = items
        vector._length = length
        return vector

    def append(self, item: T) -> AppendVector[T]:
        """A vector with ``item`` added at the end; this one is unchanged."""
        items = self._items
        if len(items) != self._length:
            items = items[: self._length]
        items.append(item)
        return AppendVector._sharing(items, self._length + 1)

    def splice(self, start: int, end: int, new: Iterable[T]) -> AppendVector[T]:
        """A copy with the inclusive run ``start..end`` replaced by ``new``."""
        items = self._items[:start]
        items.extend(new)
        items.extend(self._items[end + 1 : self._length])
        return AppendVector._sharing(items, len(items))

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"index {index} out of range for a vector of {self._length}")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        items = self._items
        for i in range(self._length):
            yield items[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AppendVector):
            return NotImplemented
        return self._length == other._length and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"AppendVector({list(self)!r})"
