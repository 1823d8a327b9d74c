"""Chunks of events between the two passes of a timeline build: in memory, or on disk.

The first pass parses files chunk by chunk; the second needs bundle-level summaries (the
reference year, the milestone timeline) that exist only once every file is read. An in-memory
spool suits triage (the result is held in memory anyway); a disk spool keeps `ingest`'s memory
flat however large the bundle: each chunk is one Parquet file, read back and deleted in order.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import polars as pl

# lz4: the cheapest codec to write and read back; the spool lives only as long as the build.
_COMPRESSION = "lz4"


class Spool:
    def __init__(self, folder: Path | None = None):
        self._frames: list[pl.DataFrame] = []
        self._paths: list[Path] = []
        self._dir = Path(tempfile.mkdtemp(prefix="k3f-spool-", dir=folder)) if folder is not None else None

    @property
    def on_disk(self) -> bool:
        return self._dir is not None

    def add(self, frame: pl.DataFrame) -> None:
        if self._dir is None:
            self._frames.append(frame)
            return
        path = self._dir / f"{len(self._paths):06d}.parquet"
        frame.write_parquet(path, compression=_COMPRESSION, statistics=False)
        self._paths.append(path)

    def __len__(self) -> int:
        return len(self._paths) if self._dir is not None else len(self._frames)

    def drain(self) -> Iterator[pl.DataFrame]:
        """Every chunk in the order added; each is forgotten once handed out."""
        if self._dir is None:
            frames, self._frames = deque(self._frames), []
            while frames:
                yield frames.popleft()
            return
        for path in self._paths:
            frame = pl.read_parquet(path)
            path.unlink()
            yield frame
        self._paths = []

    def close(self) -> None:
        self._frames = []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
