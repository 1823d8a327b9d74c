"""`k3forensics signatures profile BUNDLE`: one row per signature, slowest first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3forensics.cli import cli
from k3forensics.library.loader import Library
from k3forensics.library.match import match_events
from k3forensics.library.model import Role
from k3forensics.library.profile import Profiler
from k3forensics.timeline.ingest import build_timeline

BUNDLE = Path(__file__).resolve().parent.parent / "samples" / "oom-weight-load" / "bundle"


def test_profile_prints_the_slowest_signatures() -> None:
    out = CliRunner().invoke(cli, ["signatures", "profile", str(BUNDLE), "--top", "5"])
    assert out.exit_code == 0, out.output
    assert "literal prefilter over all lines" in out.output
    assert "signatures:" in out.output and "timeline built in" in out.output
    assert "oom." in out.output  # the bundle's OOM signatures do the work here


def test_profile_json_covers_every_signature(library: Library) -> None:
    out = CliRunner().invoke(cli, ["signatures", "profile", str(BUNDLE), "--top", "0", "--format", "json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert {r["signature"] for r in rows} == {s.id for s in library.of_role(*Role)}
    assert all(set(r) == {"signature", "seconds", "candidates", "hits", "prefilter"} for r in rows)
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    assert all(r["hits"] <= r["candidates"] for r in rows)
    # The profile's hit counts are the matcher's.
    hits = match_events(build_timeline(BUNDLE, library).events, library, tuple(Role))
    counted = hits.group_by("signature").len()
    assert {s: n for s, n in counted.iter_rows()} == {r["signature"]: r["hits"] for r in rows if r["hits"]}


def test_profile_of_a_missing_bundle_is_a_clear_error(tmp_path: Path) -> None:
    out = CliRunner().invoke(cli, ["signatures", "profile", str(tmp_path / "nope")])
    assert out.exit_code == 2 and "error:" in out.output and "Traceback" not in out.output


SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.mark.parametrize("name", ["oom-weight-load", "nccl-ib-two-node", "oom-runtime-concurrency",
                                  "xid79-fallen-off-bus"])
def test_profile_of_a_digested_build_counts_what_every_line_gives(name: str, library: Library) -> None:
    # Row-local signatures measured chunk by chunk, the others on the digest: the same
    # candidates and hits as measuring every signature on every line.
    bundle = SAMPLES / name / "bundle"
    streamed = Profiler(library)
    timeline = build_timeline(bundle, library, chunk_bytes=4096, digest=True, on_chunk=streamed.chunk,
                              digest_roles=tuple(Role))
    assert timeline.digest and streamed.chunks > 1
    whole = Profiler(library).finish(build_timeline(bundle, library).events)
    columns = ["signature", "candidates", "hits"]
    assert streamed.finish(timeline.events).select(columns).sort("signature").equals(
        whole.select(columns).sort("signature"))
