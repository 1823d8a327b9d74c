"""Every document source keeps one event per line and never raises, whatever the text."""

from __future__ import annotations

import importlib

import pytest
from _docgolden import DOCUMENT_SOURCES, check_contract, head, inputs, log_heads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from k3forensics.sources import detect_document
from k3forensics.sources.base import ParseContext, lines_frame

MODULES = [importlib.import_module(f"k3forensics.sources.{name}") for name in DOCUMENT_SOURCES]
# Fragments of every format, so that random lines get past the first regex now and then.
FRAGMENTS = st.sampled_from([
    "| NVIDIA-SMI 580.65.06  Driver Version: 580.65.06  CUDA Version: 13.0 |", "|   0  NVIDIA H200  On  |",
    "GPU 0: NVIDIA H200", "PyTorch version: 2.8.0", "[pip3] torch==2.8.0", "vllm serve m --tp", "export A=1",
    "docker run vllm/vllm-openai", "# TYPE m gauge", 'm{a="1"} 1', "{", '{"request": {}}', "Name:  pod",
    "  Warning  BackOff  2m  kubelet  msg", "LAST SEEN   TYPE   REASON   OBJECT   MESSAGE", "\\", "\t", "\x1b[31m",
    "GPU0\t X \tNV18", "    FB Memory Usage", "Timestamp : Fri Aug 14 10:11:12 2026", "'", '"',
])
LINES = st.lists(st.one_of(FRAGMENTS, st.text(max_size=60), st.tuples(FRAGMENTS, st.text(max_size=20)).map("".join)),
                 max_size=25)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=LINES)
def test_parse_total(module, lines):
    lines = [line.replace("\n", " ").replace("\r", " ") for line in lines]
    frame = lines_frame(lines)
    result = module.parse(frame, ParseContext(file="random.txt"))
    check_contract(result, frame)
    module.detect("\n".join(lines))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.NAME)
def test_empty_file(module):
    frame = lines_frame([])
    check_contract(module.parse(frame, ParseContext(file="empty.txt")), frame)


@pytest.mark.parametrize("name", DOCUMENT_SOURCES)
def test_registry_routes_each_case_to_its_source(name):
    for path in inputs(name):
        found = detect_document(head(path))
        assert found is not None and found.NAME == name, path.name
    for path in log_heads():
        assert detect_document(head(path)) is None, path.name
