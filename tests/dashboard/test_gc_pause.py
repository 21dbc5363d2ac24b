from __future__ import annotations

import gc

import pytest

from dashboard.storage.gc_pause import gc_paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_an_error() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("the ingest failed")
    assert gc.isenabled()


def test_an_inner_pause_leaves_the_collector_to_the_outer_one() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
