"""Chunks of events between the two passes of a timeline build: in memory, or on disk.

The first pass parses files chunk by chunk; the second needs bundle-level summaries (the
reference year, the milestone timeline) that exist only once every file is read. An in-memory
spool suits a small bundle; a disk spool keeps memory flat however large the bundle: each
chunk is one Parquet file, read back and deleted in order. Triage starts in memory and moves
to disk once the chunks outgrow a budget, or from the start when the bundle's text does (then
it keeps a digest, see `digest.py`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import polars as pl

# lz4: the cheapest codec to write and read back; the spool lives only as long as the build.
_COMPRESSION: Literal["lz4"] = "lz4"


class Spool:
    """`folder` None: chunks stay in memory. With `folder`: on disk there; with `memory_bytes`
    as well, in memory until they add up to more, then all of them on disk."""

    def __init__(self, folder: Path | None = None, memory_bytes: int | None = None):
        self._frames: list[pl.DataFrame] = []
        self._paths: list[Path] = []
        self._folder, self._memory_bytes, self._held = folder, memory_bytes, 0
        self._dir: Path | None = None
        if folder is not None and memory_bytes is None:
            self._spill()

    @property
    def on_disk(self) -> bool:
        return self._dir is not None

    def add(self, frame: pl.DataFrame) -> None:
        if self._dir is None:
            self._held += int(frame.estimated_size())
            self._frames.append(frame)
            if self._folder is not None and self._memory_bytes is not None and self._held > self._memory_bytes:
                self._spill()
            return
        self._write(frame)

    def expect(self, text_bytes: int) -> None:
        """Chunks parsed from this many bytes of text are coming: on disk from the first one
        when they outweigh the memory budget (their events hold the text and more), so that a
        large bundle's triage keeps only its digest from the start, not from the spill on."""
        if self._dir is None and self._folder is not None and self._memory_bytes is not None \
                and text_bytes > self._memory_bytes:
            self._spill()

    def _spill(self) -> None:
        """From now on on disk, the chunks held so far first."""
        self._dir = Path(tempfile.mkdtemp(prefix="k3f-spool-", dir=self._folder))
        frames, self._frames, self._held = self._frames, [], 0
        for frame in frames:
            self._write(frame)

    def _write(self, frame: pl.DataFrame) -> None:
        assert self._dir is not None
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
