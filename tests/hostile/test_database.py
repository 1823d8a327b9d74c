"""A timeline database is an input too (`triage`, `report`, `query` and `export` read one, and
one may come from a stranger): its content must not steer where anything is written."""

from __future__ import annotations

import make
from hostile_run import EXIT_RESULT, Sandbox, _listing, check_run


def test_export_of_a_poisoned_database_writes_only_into_its_folder(sandbox: Sandbox) -> None:
    (sandbox.inputs / "vllm.log").write_bytes(make.failing_log())
    check_run(sandbox.run("ingest", sandbox.inputs / "vllm.log", "--db", "timeline.duckdb"), [0])
    target = sandbox.root / "injected.csv"
    make.poison_database(sandbox.work / "timeline.duckdb", target)
    sandbox.snapshot()
    triage, export = sandbox.run_all(["triage", "timeline.duckdb", "--format", "json"],
                                     ["export", "timeline.duckdb", "--parquet", "out"])
    assert not target.exists(), "export ran SQL taken from a table name"
    assert not (sandbox.work / "escaped-table.parquet").exists()  # out/zz/../../escaped-table.parquet
    check_run(triage, EXIT_RESULT)  # the extra tables are ignored
    check_run(export, [0, 2])
    outside = {p for p in _listing(sandbox.root) - sandbox._before if not p.startswith("work/out/")}  # type: ignore[operator]
    assert outside <= {"work/out"}, sorted(outside)
