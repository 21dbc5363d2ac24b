from __future__ import annotations

import json
from pathlib import Path

from dashboard.demo import DemoManifest
from tests.dashboard.demo.conftest import zstd_frames


def test_zstd_logs_are_one_frame_for_the_header_and_one_per_append_batch(
    demo: tuple[Path, DemoManifest],
) -> None:
    root, manifest = demo
    zstd = [root / e.path for e in manifest.files_of("dsh") if e.path.endswith(".zstd")]
    assert len(zstd) >= 4
    for path in zstd:
        frames = list(zstd_frames(path.read_bytes()))
        assert len(frames) > 3, path
        header, *batches = frames
        assert json.loads(header)["type"] == "session"
        for frame in batches:
            # A frame holds whole lines: a reader can stop at any frame boundary.
            assert frame.endswith(b"\n")
            assert all(isinstance(json.loads(line), dict) for line in frame.splitlines())
