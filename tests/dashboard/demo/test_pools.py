from __future__ import annotations

from pathlib import Path

from dashboard.demo import DemoManifest
from dashboard.demo.pools import TASKS, TITLE_LIMIT, session_title
from tests.dashboard.demo.conftest import read_lines


def test_a_short_task_is_its_own_title() -> None:
    assert session_title("Add a --dry-run flag to the release script.") == (
        "Add a --dry-run flag to the release script."
    )


def test_a_long_task_is_cut_at_a_word_boundary_and_ends_in_an_ellipsis() -> None:
    task = "Fix the failing test in tests/test_reader.py and explain the cause."

    assert session_title(task) == "Fix the failing test in tests/test_reader.py and explain…"


def test_a_word_that_ends_where_the_room_ends_is_kept_whole() -> None:
    assert session_title("alpha beta gamma delta", limit=12) == "alpha beta…"
    assert session_title("alpha beta gamma delta", limit=11) == "alpha beta…"


def test_every_demo_title_fits_and_is_whole_words(demo: tuple[Path, DemoManifest]) -> None:
    root, _ = demo
    titles = {
        read_lines(path)[0].get("title", "")
        for pattern in ("session.jsonl", "session.jsonl.zstd")
        for path in root.rglob(pattern)
    }
    titles.discard("")

    assert titles
    for title in titles:
        assert len(title) <= TITLE_LIMIT
        assert title in TASKS or (title.endswith("…") and any(t.startswith(title[:-1] + " ") for t in TASKS))
