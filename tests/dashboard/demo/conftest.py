from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from dashboard.demo import DemoManifest, write_demo_dataset


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoManifest]:
    root = tmp_path_factory.mktemp("demo")
    return root, write_demo_dataset(root)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """Every JSON line of a file, decompressing a zstd log frame by frame."""
    if path.name.endswith(".zstd"):
        text = b"".join(zstd_frames(path.read_bytes())).decode("utf-8")
    else:
        text = path.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


def zstd_frames(data: bytes) -> Iterator[bytes]:
    """The decompressed content of each frame of a concatenation of zstd frames."""
    while data:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        yield decompressor.decompress(data)
        data = decompressor.unused_data
