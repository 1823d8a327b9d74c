"""The registry of sources: one explicit, ordered table, plus the `k3forensics.sources`
entry-point group through which a team adds a parser without editing the core.

Document sources (one structure per file) are tried first, in order; a file none of them
claims is a log file, parsed line by line with the formats of every log source.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from types import ModuleType

# Most specific first: a detector must not claim a file another one describes better.
DOCUMENT_SOURCES = (
    "k3forensics.sources.api_capture",
    "k3forensics.sources.prometheus",
    "k3forensics.sources.nvidia_smi",
    "k3forensics.sources.collect_env",
    "k3forensics.sources.kubectl",
    "k3forensics.sources.launch",
)
# Used only to name a log file's dominant type in the files manifest.
LOG_SOURCES = (
    "k3forensics.sources.vllm",
    "k3forensics.sources.nccl",
    "k3forensics.sources.pytorch",
    "k3forensics.sources.kernel",
    "k3forensics.sources.traceback",
)
ENTRY_POINT_GROUP = "k3forensics.sources"


@cache
def document_sources() -> tuple[ModuleType, ...]:
    modules = [importlib.import_module(name) for name in DOCUMENT_SOURCES]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        modules.insert(0, ep.load())  # a team's parser wins over the shipped ones
    return tuple(modules)


@cache
def log_sources() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(name) for name in LOG_SOURCES)


def detect_document(head: str) -> ModuleType | None:
    for module in document_sources():
        if module.detect(head):
            return module
    return None


def detect_log(head: str) -> str:
    for module in log_sources():
        if module.detect(head):
            return str(module.NAME)
    return "generic"
