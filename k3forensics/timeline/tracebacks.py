"""Traceback groups over a file read in chunks: `sources.traceback.annotate` with carried state.

A traceback group is a run of consecutive traceback-shaped lines of one process stream (file +
process + pid) that follows a `Traceback (most recent call last):` line. The whole-file rule
numbers the runs of a stream (`_run`, the count of non-traceback lines so far) and the starts
inside a run (`_nth`); the group id is a hash of (stream, _run, _nth). Reading a file in chunks,
`FileTracebacks` carries both counts per stream from one chunk to the next, so every line gets
the id the whole-file rule gives it. `tb_final` (the group's last exception line) may only be
known chunks later: each chunk reports its groups' last exception line to `finals`, and
`final_flags` sets the flag once the file is done.

A batch of whole small files goes through one `FileTracebacks(whole_files=True)`: streams are
keyed by file too, and nothing is carried (every file ends inside the batch).

Each test runs only on the lines that can pass it (a literal first), which is most of the
saving over the whole-file expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from k3forensics.sources.traceback import CHAIN, EXCEPTION, FRAME, INDENTED, START

_STREAM = ["file", "_proc", "_pid"]
_KEY_SCHEMA = {"file": pl.Utf8, "_proc": pl.Utf8, "_pid": pl.Int64}
# Literals without which the line cannot match the pattern (checked first, the regex on the rest).
_START_LITERAL = "Traceback"
_FRAME_LITERAL = 'File "'
_CHAIN_LITERAL = "above exception"
# One regex alternation: the engine's literal search is about twice as fast here as Aho-Corasick.
_EXCEPTION_WORDS = "Error|Exception|Exit|Interrupt|Failure|Warning|Fault"
_LITERALS = "|".join((_START_LITERAL, _FRAME_LITERAL, _CHAIN_LITERAL))  # no regex metacharacter in them
_BLANK = r"^\s*$"


def _where(texts: pl.Series, mask: pl.Series, pattern: str) -> pl.Series:
    """Boolean `texts matches pattern`, running the regex only where `mask` is true."""
    out = np.zeros(texts.len(), dtype=bool)
    rows = mask.fill_null(False).arg_true()
    if rows.len():
        out[rows.to_numpy()] = texts.gather(rows).str.contains(pattern).fill_null(False).to_numpy()
    return pl.Series(out)


def _exceptions(texts: pl.Series) -> pl.Series:
    """The exception class of exception-shaped lines (else null)."""
    out = pl.repeat(None, texts.len(), dtype=pl.Utf8, eager=True)
    rows = texts.str.contains(_EXCEPTION_WORDS).fill_null(False).arg_true()
    if rows.len():
        out = out.scatter(rows, texts.gather(rows).str.extract(EXCEPTION, 1))
    return out


def shapes(message: pl.Series) -> pl.DataFrame:
    """Per line: `_start`, `_belongs` (traceback-shaped) and `_exc` (exception class)."""
    msg = message.fill_null("")
    # One pass for the three literals (few lines hold one), then each test on those lines.
    held = msg.str.contains(_LITERALS).fill_null(False)
    start = _where(msg, held, START)
    exc = _exceptions(msg)
    belongs = (
        start
        | _where(msg, held, FRAME)
        | _where(msg, held, CHAIN)
        | msg.str.contains(INDENTED).fill_null(False)
        | exc.is_not_null()
        | msg.str.contains(_BLANK).fill_null(False)
    )
    return pl.DataFrame({"_start": start, "_belongs": belongs, "_exc": exc})


SHAPE_COLUMNS = ("_start", "_belongs", "_exc")  # what `shapes` gives


@dataclass
class FileTracebacks:
    """Traceback state of one file, fed its chunks in order."""

    file: str
    runs: dict[tuple[str, str, int], tuple[int, int]] = field(default_factory=dict)  # stream -> (_run, _nth)
    finals: dict[int, int] = field(default_factory=dict)  # tb_group -> line_no of its last exception
    whole_files: bool = False  # chunks hold whole files: no stream state to carry

    def annotate(self, events: pl.DataFrame) -> pl.DataFrame:
        """Add tb_group, exception and a provisional tb_final (see `final_flags`). The `shapes`
        columns are computed unless `events` holds them (`parse_log_frame(per_message=shapes)`)."""
        if not set(SHAPE_COLUMNS) <= set(events.columns):
            events = events.hstack(shapes(events.get_column("message")))
        frame = events.with_columns(
            pl.col("process").fill_null("").alias("_proc"), pl.col("pid").fill_null(-1).alias("_pid"),
        )
        # Only streams with a traceback start here, or one still open, need their lines numbered;
        # the others only count their plain lines (most lines of a big log).
        opened = [key for key, (_, nth) in self.runs.items() if nth > 0]
        started = frame.filter(pl.col("_start")).select(_STREAM).unique()
        keys = pl.concat([started, pl.DataFrame(opened, schema=_KEY_SCHEMA, orient="row")])
        frame = frame.with_row_index("_i")
        streams = frame.select(*_STREAM, "_belongs")  # all `_carry_plain` reads (no copy of the lines)
        if keys.height:
            keys = keys.unique()
            busy = frame.join(keys, on=_STREAM, how="semi", maintain_order="left")
            streams = streams.join(keys, on=_STREAM, how="anti")
        else:  # most chunks: no traceback starts in them and none is open
            busy = frame.clear()
        if not self.whole_files:
            self._carry_plain(streams)
        groups = pl.repeat(None, frame.height, dtype=pl.Int64, eager=True).alias("tb_group")
        if busy.height:
            numbered = self._numbered(busy).select("_i", pl.when(pl.col("_belongs") & (pl.col("_nth") > 0)).then(
                (pl.struct(pl.col("file"), pl.col("_proc").alias("process"),
                           pl.col("_pid").alias("pid"), "_run", "_nth").hash(seed=7) // 2).cast(pl.Int64)
            ).otherwise(None).alias("tb_group"))
            groups = groups.scatter(numbered.get_column("_i"), numbered.get_column("tb_group"))
        out = frame.with_columns(groups).drop("_i")
        self._note_finals(out)
        return out.with_columns(
            self.final_flags(out).alias("tb_final"), pl.col("_exc").alias("exception"),
        ).drop("_start", "_belongs", "_exc", "_proc", "_pid", "_run", "_nth", strict=False)

    def final_flags(self, events: pl.DataFrame) -> pl.Expr:
        """tb_final from the last exception line of each group seen so far."""
        if not self.finals:
            return pl.lit(False)
        last = pl.col("tb_group").replace_strict(self.finals, default=None, return_dtype=pl.Int64)
        return (pl.col("tb_group").is_not_null() & (pl.col("line_no") == last)).fill_null(False)

    def _carry_plain(self, frame: pl.DataFrame) -> None:
        """No traceback can be open in this chunk: only count each stream's plain lines."""
        counts = frame.group_by(_STREAM).agg((~pl.col("_belongs")).sum().alias("plain"))
        for file, proc, pid, plain in counts.iter_rows():
            run, nth = self.runs.get((file, proc, pid), (0, 0))
            self.runs[(file, proc, pid)] = (run + plain, nth if plain == 0 else 0)

    def _numbered(self, frame: pl.DataFrame) -> pl.DataFrame:
        """`_run` and `_nth` as the whole-file rule numbers them, carried across chunks."""
        carry = pl.DataFrame(
            [(*key, run, nth) for key, (run, nth) in self.runs.items()],
            schema={**_KEY_SCHEMA, "_run0": pl.UInt32, "_nth0": pl.UInt32}, orient="row",
        )
        local_run = (~pl.col("_belongs")).cum_sum().over(_STREAM)
        numbered = frame.join(carry, on=_STREAM, how="left", maintain_order="left").with_columns(
            local_run.alias("_local"),
        ).with_columns(
            (pl.col("_local") + pl.col("_run0").fill_null(0)).cast(pl.UInt32).alias("_run"),
        ).with_columns(
            # The hash of the group id depends on the dtypes: UInt32, as the whole-file cum_sum gives.
            (pl.col("_start").cum_sum().over([*_STREAM, "_run"])
             + pl.when(pl.col("_local") == 0).then(pl.col("_nth0").fill_null(0)).otherwise(pl.lit(0, pl.UInt32)))
            .cast(pl.UInt32).alias("_nth"),
        )
        if not self.whole_files:
            last = numbered.group_by(_STREAM).agg(pl.col("_run").last(), pl.col("_nth").last())
            for file, proc, pid, run, nth in last.iter_rows():
                self.runs[(file, proc, pid)] = (run, nth)
        return numbered.drop("_run0", "_nth0", "_local")

    def _note_finals(self, frame: pl.DataFrame) -> None:
        exc_lines = frame.filter(pl.col("tb_group").is_not_null() & pl.col("_exc").is_not_null())
        if exc_lines.height == 0:
            return
        for group, line_no in exc_lines.group_by("tb_group").agg(pl.col("line_no").max()).iter_rows():
            self.finals[group] = max(line_no, self.finals.get(group, line_no))
