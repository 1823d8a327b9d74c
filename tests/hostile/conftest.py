"""Fixtures of the hostile-input suite: a sandbox per test, one matplotlib cache per session, and
the shared bundles whose one set of command runs many tests read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import make
import pytest
from hostile_run import Accepted, Case, Sandbox, ZooRun, run_cases


@pytest.fixture(scope="session")
def mpl_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The report draws with matplotlib, which keeps a font cache in MPLCONFIGDIR (else in HOME):
    # one per session, outside every sandbox, so that a sandbox's HOME stays empty.
    return tmp_path_factory.mktemp("mplconfig")


@pytest.fixture
def sandbox(tmp_path: Path, mpl_config: Path) -> Sandbox:
    return Sandbox(tmp_path, mpl_config)


@dataclass
class Shared:
    zoo: make.Zoo
    oddities: make.Oddities
    results: dict[str, Accepted]


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory, mpl_config: Path) -> Shared:
    """The bundles many tests read, run side by side once: the zoo (one file per text, metrics
    and JSON case, links to outside), the payload log, the archive of harmless oddities."""
    boxes = {key: Sandbox(tmp_path_factory.mktemp(key), mpl_config) for key in ("zoo", "payload", "oddities")}
    zoo = make.zoo(boxes["zoo"].inputs)
    oddities = make.oddities_tar(boxes["oddities"].inputs)
    results = run_cases({
        "zoo": Case(boxes["zoo"], zoo.bundle, name="zoo"),
        "payload": Case(boxes["payload"], make.payload_log(boxes["payload"].inputs), name="payload"),
        "oddities": Case(boxes["oddities"], oddities.bundle, full=False, name="oddities"),
    })
    return Shared(zoo, oddities, results)


@pytest.fixture(scope="session")
def zoo(shared: Shared) -> ZooRun:
    shared.results["zoo"].check()
    return ZooRun(shared.zoo, shared.results["zoo"])


@pytest.fixture(scope="session")
def payload(shared: Shared) -> Accepted:
    shared.results["payload"].check()
    return shared.results["payload"]


@pytest.fixture(scope="session")
def oddities(shared: Shared) -> tuple[make.Oddities, Accepted]:
    shared.results["oddities"].check()
    return shared.oddities, shared.results["oddities"]
