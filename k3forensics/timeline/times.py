"""Give year-less and zone-less timestamps a year and zone, and every line an order time.

vLLM prints `MM-DD HH:MM:SS` with no year and no zone; glog and journald too. The year comes
from the rest of the bundle (container envelopes, ISO timestamps, `dmesg -T`, metrics), the
zone is taken as UTC (containers log in UTC unless told otherwise). Both are marked inferred.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import polars as pl

from k3forensics.sources.base import UTC_US

PLACEHOLDER_YEAR = 2000  # see sources.logformat.yearless


DATED = ("exact", "zoneless")


def in_year(expr: pl.Expr, year: pl.Expr) -> pl.Expr:
    # Shifting by whole years keeps the time of day and turns a year-less Feb 29 into Feb 28
    # of a non-leap year (a rebuilt date would not exist and raise).
    return expr.dt.offset_by(pl.format("{}y", year - expr.dt.year()))


def resolved(ts: pl.Expr, yearless: pl.Expr, year: pl.Expr) -> pl.Expr:
    """A raw (pass-1) time resolved: when `yearless`, moved into `year` (its file's year plus
    the New Year crossings before it); else as it is."""
    return pl.when(yearless).then(in_year(ts, year)).otherwise(ts).cast(UTC_US)


def _first_year(first: pl.Expr, reference: datetime) -> pl.Expr:
    """The year that puts a file's first year-less time nearest the reference instant."""
    ref = pl.lit(reference).cast(UTC_US)
    candidates = [in_year(first, pl.lit(reference.year + d)) for d in (-1, 0, 1)]
    distance = [(c - ref).abs() for c in candidates]
    return (
        pl.when(distance[0] < pl.min_horizontal(distance[1], distance[2])).then(pl.lit(reference.year - 1))
        .when(distance[2] < distance[1]).then(pl.lit(reference.year + 1))
        .otherwise(pl.lit(reference.year))
    )


def resolved_quality() -> pl.Expr:
    """`ts_quality` once times are resolved: a line without a time says `missing` whatever its
    format promised (a year-less date no calendar has parses to null), a year or zone taken
    from elsewhere says `inferred`."""
    quality = pl.col("ts_quality")
    return (
        pl.when(pl.col("ts").is_null()).then(pl.lit("missing"))
        .when(quality.is_in(["yearless", "zoneless"])).then(pl.lit("inferred"))
        .otherwise(quality).alias("ts_quality")
    )


def reference_instant(events: pl.DataFrame, hint: datetime | None = None) -> datetime:
    """The median time of the bundle's dated lines; else the hint (newest file time); else now."""
    dated = events.filter(pl.col("ts_quality").is_in(["exact", "zoneless"]) & pl.col("ts").is_not_null())
    if dated.height:
        return dated.select(pl.col("ts").median()).item()
    return hint or datetime.now(UTC)


def reference_year(events: pl.DataFrame, hint: datetime | None = None) -> int:
    return reference_instant(events, hint).year


def resolve_times(events: pl.DataFrame, reference: datetime) -> pl.DataFrame:
    """Fix year-less rows, mark inferred rows, and add `ts_order`: the row's time, else its
    nearest earlier (then later) neighbour's in the file.

    Each file's first year-less line takes the year that puts it nearest the bundle's
    reference instant; later lines of the file move on a year at each New Year crossing
    (months running backwards by more than half a year).
    """
    yearless = pl.col("ts_quality") == "yearless"
    ts = pl.col("ts")
    month = pl.when(yearless).then(ts.dt.month()).otherwise(None)
    prev_month = month.forward_fill().shift(1).over("file", order_by="line_no")
    wrapped = (yearless & (month < prev_month - 6)).fill_null(False).cast(pl.Int32)
    wraps_so_far = wrapped.cum_sum().over("file", order_by="line_no")
    first = pl.when(yearless).then(ts).otherwise(None).drop_nulls().first().over("file")
    rebuilt = in_year(ts, _first_year(first, reference) + wraps_so_far)
    out = events.with_columns(
        pl.when(yearless).then(rebuilt).otherwise(ts).cast(UTC_US).alias("ts"), resolved_quality(),
    )
    return out.with_columns(
        pl.col("ts").forward_fill().backward_fill().over("file", order_by="line_no").alias("ts_order"),
    )


# -- the same rules over a file read in chunks ------------------------------------------------------
#
# Pass 1 (`FileClock.observe`, while parsing) numbers each line's New Year crossings (`_wraps`),
# collects the dated times for the reference instant and remembers the file's first times.
# Pass 2 (`FileClock.resolve`, once the reference is known) rebuilds the year-less times and
# forward-fills `ts_order`, carrying the last time from one chunk to the next.

_YEARLESS = pl.col("ts_quality") == "yearless"
_MONTH = pl.when(_YEARLESS).then(pl.col("ts").dt.month()).otherwise(None)


@dataclass
class Stamp:
    """A raw (pass-1) time with what resolving it needs."""

    ts: datetime
    yearless: bool
    wraps: int


@dataclass
class FileClock:
    """Time inference state of one file, fed its chunks in order (pass 1, then pass 2)."""

    last_month: int | None = None
    wraps: int = 0
    first_yearless: datetime | None = None   # raw, placeholder year
    first_stamp: Stamp | None = None         # the first line with a time: leading lines take it
    last_stamp: Stamp | None = None          # carried forward to the next chunk's first lines
    dated: list[np.ndarray] = field(default_factory=list)  # exact/zoneless times, µs since epoch
    year: int | None = None                  # of the first year-less line, once the reference is known
    carried: datetime | None = None          # pass 2: the last resolved time so far

    def observe(self, events: pl.DataFrame) -> tuple[pl.DataFrame, Stamp | None]:
        """Pass 1: add `_wraps` (New Year crossings so far) and note the file's times. Also
        returns the last time before this chunk (for `stamps_before`)."""
        before = self.last_stamp
        prev = _MONTH.forward_fill().shift(1)
        if self.last_month is not None:
            prev = prev.fill_null(self.last_month)
        wrapped = (_YEARLESS & (_MONTH < prev - 6)).fill_null(False).cast(pl.Int32)
        out = events.with_columns((wrapped.cum_sum() + self.wraps).cast(pl.Int32).alias("_wraps"))
        # Select before filtering: a filter copies every column it is given (the text ones too).
        timed = out.select("ts", "ts_quality", "_wraps").filter(pl.col("ts").is_not_null())
        if timed.height:
            self._note(timed)
        return out, before

    def _note(self, timed: pl.DataFrame) -> None:
        yearless = timed.filter(pl.col("ts_quality") == "yearless")
        if yearless.height:
            if self.first_yearless is None:
                self.first_yearless = yearless.get_column("ts")[0]
            self.last_month = yearless.get_column("ts").dt.month()[-1]
            self.wraps = int(timed.get_column("_wraps")[-1])
        dated = timed.filter(pl.col("ts_quality").is_in(DATED)).get_column("ts")
        if dated.len():
            self.dated.append(dated.dt.epoch("us").to_numpy())
        first, last = timed.row(0), timed.row(-1)
        if self.first_stamp is None:
            self.first_stamp = Stamp(first[0], first[1] == "yearless", first[2])
        self.last_stamp = Stamp(last[0], last[1] == "yearless", last[2])

    def summary(self, file: str) -> pl.DataFrame:
        """The file's CLOCK_SCHEMA row (for `file_times`)."""
        first = self.first_stamp
        return pl.DataFrame({
            "file": [file], "first_yearless": [self.first_yearless], "first_ts": [first.ts if first else None],
            "first_is_yearless": [first.yearless if first else None], "first_wraps": [first.wraps if first else None],
        }, schema=CLOCK_SCHEMA)

    def set_year(self, reference: datetime) -> None:
        if self.first_yearless is not None:
            frame = pl.DataFrame({"first": [self.first_yearless]}, schema={"first": UTC_US})
            self.year = int(frame.select(_first_year(pl.col("first"), reference)).item())

    def resolve_stamp(self, stamp: Stamp | None) -> datetime | None:
        if stamp is None or not stamp.yearless:
            return stamp.ts if stamp else None
        frame = pl.DataFrame({"ts": [stamp.ts]}, schema={"ts": UTC_US})
        return frame.select(in_year(pl.col("ts"), pl.lit(self.year) + stamp.wraps)).item()

    def resolve(self, events: pl.DataFrame) -> pl.DataFrame:
        """Pass 2: the rebuilt `ts`, `ts_quality` (inferred) and `ts_order`, like `resolve_times`."""
        year = pl.lit(self.year if self.year is not None else 0, pl.Int32)
        rebuilt = resolved(pl.col("ts"), _YEARLESS, year + pl.col("_wraps"))
        out = events.with_columns(rebuilt.alias("ts"), resolved_quality())
        if "_ff_ts" in events.columns:
            # A sieved chunk (`sieve.py`) lacks lines in between: each line brings the stamp of
            # the last timed line at or before it instead.
            order = resolved(pl.col("_ff_ts"), pl.col("_ff_yearless"), year + pl.col("_ff_wraps"))
            start = self.resolve_stamp(self.first_stamp)
        else:
            order = pl.col("ts").forward_fill()
            start = self.carried if self.carried is not None else self.resolve_stamp(self.first_stamp)
        if start is not None:
            order = order.fill_null(pl.lit(start).cast(UTC_US))
        out = out.with_columns(order.cast(UTC_US).alias("ts_order"))
        last = out.get_column("ts_order").drop_nulls()
        if last.len():
            self.carried = last[-1]
        return out


STAMP_COLUMNS = ["_ff_ts", "_ff_yearless", "_ff_wraps"]  # what `stamps_before` adds


def stamps_before(events: pl.DataFrame, carry: Stamp | None, by_file: bool = False) -> pl.DataFrame:
    """For each line, the raw time of the last line with a time at or before it in the file
    (`_ff_ts`, `_ff_yearless`, `_ff_wraps`): what its `ts_order` is resolved from. `by_file`:
    the frame holds whole files (nothing carried), each filled on its own."""
    has_ts = pl.col("ts").is_not_null()
    columns = {
        "_ff_ts": (pl.when(has_ts).then(pl.col("ts")), carry.ts if carry else None),
        "_ff_yearless": (pl.when(has_ts).then(_YEARLESS), carry.yearless if carry else None),
        "_ff_wraps": (pl.when(has_ts).then(pl.col("_wraps")), carry.wraps if carry else None),
    }
    if by_file:
        return events.with_columns(expr.forward_fill().over("file").alias(name) for name, (expr, _) in columns.items())
    return events.with_columns(
        (expr.forward_fill().fill_null(pl.lit(start)) if start is not None else expr.forward_fill()).alias(name)
        for name, (expr, start) in columns.items()
    )


# -- the same over a batch of whole (small) files ----------------------------------------------------

# Per file: its first year-less time and its first time (raw), as FileClock keeps them.
CLOCK_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.Utf8(), "first_yearless": UTC_US, "first_ts": UTC_US, "first_is_yearless": pl.Boolean(),
    "first_wraps": pl.Int32(),
}


def observe_whole_files(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray]:
    """`FileClock.observe` over whole files at once: the events with `_wraps`, each file's
    CLOCK_SCHEMA row (files with a time), and the dated times (µs since the epoch)."""
    prev = _MONTH.forward_fill().shift(1).over("file")
    wrapped = (_YEARLESS & (_MONTH < prev - 6)).fill_null(False).cast(pl.Int32)
    out = events.with_columns(wrapped.cum_sum().over("file").cast(pl.Int32).alias("_wraps"))
    timed = out.filter(pl.col("ts").is_not_null())
    clocks = timed.group_by("file", maintain_order=True).agg(
        pl.col("ts").filter(_YEARLESS).first().alias("first_yearless"),
        pl.col("ts").first().alias("first_ts"),
        (pl.col("ts_quality").first() == "yearless").alias("first_is_yearless"),
        pl.col("_wraps").first().alias("first_wraps"),
    ).cast(CLOCK_SCHEMA)  # type: ignore[arg-type]
    dated = timed.filter(pl.col("ts_quality").is_in(DATED)).get_column("ts").dt.epoch("us").to_numpy()
    return out, clocks, dated


def file_times(clocks: pl.DataFrame, reference: datetime) -> pl.DataFrame:
    """Per file (CLOCK_SCHEMA rows): `year`, the year of its first year-less line (`set_year`),
    and `first`, its first time resolved (`resolve_stamp`): for all files in one pass."""
    year = pl.when(pl.col("first_yearless").is_not_null()).then(_first_year(pl.col("first_yearless"), reference))
    first = resolved(pl.col("first_ts"), pl.col("first_is_yearless"), pl.col("year") + pl.col("first_wraps"))
    return clocks.with_columns(year.cast(pl.Int32).alias("year")).select("file", "year", first.alias("first"))


def median_instant(clocks: list[FileClock], hint: datetime | None) -> datetime:
    """`reference_instant` from the dated times the clocks collected (which it consumes).

    A large bundle's dated times are one int64 per line (320 MB at 40 M lines): they are
    copied into one array as each clock's are released, and the middle values are found in
    place; polars then takes the median of those (one or two) values, which is the median of
    all of them."""
    total = sum(a.size for clock in clocks for a in clock.dated)
    if not total:
        return hint or datetime.now(UTC)
    values = np.empty(total, dtype=np.int64)
    at = 0
    for clock in clocks:  # a loop over files and their chunks, not over lines
        arrays, clock.dated = clock.dated, []
        while arrays:  # each array is freed once copied
            array = arrays.pop()
            values[at:at + array.size] = array
            at += array.size
    middle = sorted({(total - 1) // 2, total // 2})
    values.partition(middle)
    pair = pl.Series("ts", values[middle]).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return pl.DataFrame({"ts": pair}).select(pl.col("ts").median()).item()
