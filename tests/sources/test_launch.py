"""Launch commands, scripts, docker run, Kubernetes manifests and vLLM config files."""

from __future__ import annotations

import pytest
from _docgolden import check, head, inputs, log_heads, other_inputs

from k3forensics.sources import launch
from k3forensics.sources.base import ParseContext, lines_frame

CASES = inputs("launch")


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden(path):
    check(launch, path)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_detects_its_documents(path):
    assert launch.detect(head(path))


@pytest.mark.parametrize("path", log_heads() + other_inputs("launch"), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_declines_logs_and_other_documents(path):
    assert not launch.detect(head(path))


def test_declines_a_log_that_only_quotes_non_default_args():
    head_text = (
        "(APIServer pid=1) INFO 10-08 12:00:01 [api_server.py:1839] vLLM API server version 0.11.0\n"
        "(APIServer pid=1) INFO 10-08 12:00:01 [utils.py:233] non-default args: {'model': 'Qwen/Qwen3-32B', "
        "'tensor_parallel_size': 2}\n"
    )
    assert not launch.detect(head_text)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["--enable-prefix-caching"], [("enable_prefix_caching", "true")]),
        (["--no-enable-prefix-caching"], [("enable_prefix_caching", "false")]),
        (["--max-model-len=8192"], [("max_model_len", "8192")]),
        (["-tp", "4", "-O3"], [("tensor_parallel_size", "4"), ("compilation_config", "3")]),
        (["--trust-remote-code", "org/model"], [("trust_remote_code", "true"), ("model", "org/model")]),
        (["--seed", "-1"], [("seed", "-1")]),
        (["--compilation-config", '{"level": 3}'], [("compilation_config", '{"level": 3}')]),
    ],
)
def test_vllm_arguments(words, expected):
    assert launch.vllm_args(words, positional_model=True) == expected


def test_command_after_cd_with_inline_env_and_redirection():
    found = launch.parse_command("cd /srv && CUDA_VISIBLE_DEVICES=2,3 exec vllm serve m --port 9000 > out.log 2>&1 &")
    assert found is not None
    assert found.env == [("CUDA_VISIBLE_DEVICES", "2,3")]
    assert found.args == [("model", "m"), ("port", "9000")]


def test_bash_c_inside_docker():
    found = launch.parse_command(["docker", "run", "--rm", "vllm/vllm-openai:latest", "bash", "-c", "vllm serve m -tp 2"])
    assert found is not None and found.image == "vllm/vllm-openai:latest"
    assert found.args == [("model", "m"), ("tensor_parallel_size", "2")]


def test_docker_run_of_another_image_is_not_a_launch():
    assert launch.parse_command("docker run --rm -it ubuntu:22.04 bash") is None


def test_script_variables_are_substituted_and_secrets_redacted():
    lines = ["export HF_TOKEN=hf_secret", "TP=4", "vllm serve org/m \\", "  --tensor-parallel-size $TP \\",
             "  --api-key sk-123"]
    facts = launch.parse(lines_frame(lines), ParseContext(file="run.sh")).facts
    rows = {k: (v, n) for k, v, n in facts.iter_rows()}
    assert rows["arg.tensor_parallel_size"] == ("4", 4)
    assert rows["arg.api_key"] == ("<redacted>", 5)
    assert rows["env.HF_TOKEN"] == ("<redacted>", 1)
    assert "sk-123" not in rows["launch_command"][0]
