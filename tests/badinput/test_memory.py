"""Memory stays bounded on the two inputs built to exhaust it: a 100 MB line and a zstd bomb.

Each is read in a fresh interpreter whose peak resident size (``VmHWM``) is reported back, which
counts the C-level buffers of the zstd decoder that ``tracemalloc`` would miss. Not ``ru_maxrss``:
Linux carries it across ``exec`` from the forked parent, so a child of a large test process would
report the parent's size.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.badinput.corpus import write_huge_line_log, write_zstd_bomb

ROOT = Path(__file__).resolve().parents[2]
PEAK_LIMIT_BYTES = 300 * 1024 * 1024

_READER = """
import json, sys
from pathlib import Path
from projections.formats import read_sessions
from projections.normalized import EventRecord, LineError

errors, seqs = [], []
for session in read_sessions(Path(sys.argv[1])):
    for item in session.items:
        if isinstance(item, LineError):
            errors.append([item.path, item.line, item.field, item.reason])
        elif isinstance(item, EventRecord):
            seqs.append(item.seq)
peak_kib = next(
    int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
    if line.startswith("VmHWM:")
)
print(json.dumps({"errors": errors, "seqs": seqs, "peak": peak_kib * 1024}))
"""


def _read_in_child(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(path)], cwd=ROOT, capture_output=True, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_100_mb_line_is_refused_by_line_and_field_in_bounded_memory(tmp_path: Path) -> None:
    path = write_huge_line_log(tmp_path / "huge" / "session.jsonl", line_bytes=100 * 1024 * 1024)
    assert path.stat().st_size > 100 * 1024 * 1024
    result = _read_in_child(path)
    [error] = result["errors"]  # type: ignore[misc]
    assert error[:3] == [str(path), 3, "line"]
    assert "exceeds the" in error[3]
    assert result["seqs"] == [0, 2, 3, 4]
    assert result["peak"] < PEAK_LIMIT_BYTES  # type: ignore[operator]


def test_a_zstd_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    expanded = 1024**3
    path = write_zstd_bomb(tmp_path / "bomb" / "session.jsonl.zstd", expanded_bytes=expanded)
    assert path.stat().st_size < 100 * 1024, "the bomb must be small on disk"
    result = _read_in_child(path)
    [error] = result["errors"]  # type: ignore[misc]
    assert error[:3] == [str(path), 3, "line"]
    assert f"line of {expanded + 1} bytes exceeds the" in error[3]
    # The events around the bomb survive it.
    assert result["seqs"] == [0, 1, 2]
    assert result["peak"] < PEAK_LIMIT_BYTES  # type: ignore[operator]
