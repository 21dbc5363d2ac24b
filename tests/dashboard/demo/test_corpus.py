from __future__ import annotations

from pathlib import Path

from dashboard.demo import refold_corpus, write_corpus
from dashboard.demo.corpus import REFERENCE_NODES, REFERENCE_SESSIONS
from tests.dashboard.demo.conftest import read_lines


def test_write_corpus_reaches_its_target_size_with_some_zstd_logs(tmp_path: Path) -> None:
    # Every third log is zstd, and a session is about 200 KB: 600 KB writes at least three.
    stats = write_corpus(tmp_path, target_bytes=600_000)
    files = [p for p in tmp_path.rglob("session.jsonl*")]
    assert stats.bytes >= 600_000
    assert stats.bytes < 600_000 + 250_000
    assert len(files) == stats.files == stats.sessions
    assert 0 < stats.zstd_files < stats.files
    assert sum(1 for p in files if p.name.endswith(".zstd")) == stats.zstd_files
    assert all(read_lines(p)[0]["type"] == "session" for p in files)


def test_write_corpus_is_deterministic(tmp_path: Path) -> None:
    write_corpus(tmp_path / "a", target_bytes=100_000, seed=3)
    write_corpus(tmp_path / "b", target_bytes=100_000, seed=3)
    a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in a)


def surface_stats(sessions: int) -> tuple[int, int, int, int, list[int]]:
    nodes = metered = rewrites = count = 0
    sizes = []
    for _, events in refold_corpus(sessions=sessions):
        count += 1
        assert [e.seq for e in events] == list(range(len(events)))
        surface: list[int] = []
        for event in events:
            op = event.surface_op
            if op == "append":
                surface.append(event.seq)
            elif isinstance(op, dict):
                start, end = (
                    (op["start"], op["end"])
                    if "start" in op
                    else (surface.index(op["startSeq"]), surface.index(op["endSeq"]))
                )
                surface[start : end + 1] = [event.seq]
                rewrites += event.type == "system/message"
            metered += event.type in ("compaction/summary", "compaction/prune")
        nodes += len(surface)
        sizes.append(len(surface))
    return count, nodes, metered, rewrites, sizes


def test_refold_corpus_scales_the_reference_shape() -> None:
    sessions = 84
    count, nodes, metered, rewrites, sizes = surface_stats(sessions)
    expected_nodes = REFERENCE_NODES * sessions / REFERENCE_SESSIONS
    assert count == sessions
    assert abs(nodes - expected_nodes) / expected_nodes < 0.03
    assert metered == round(2_206 * sessions / REFERENCE_SESSIONS)
    assert rewrites == round(106 * sessions / REFERENCE_SESSIONS)
    assert 1_800 <= max(sizes) <= 2_050


def test_refold_corpus_is_deterministic() -> None:
    first = [
        (sid, [(e.seq, e.type, dict(e.data)) for e in events]) for sid, events in refold_corpus(sessions=5)
    ]
    again = [
        (sid, [(e.seq, e.type, dict(e.data)) for e in events]) for sid, events in refold_corpus(sessions=5)
    ]
    assert first == again
