"""How the server was started: a command line, a shell script, `docker run`, a Kubernetes or
compose manifest, or a vLLM `--config` YAML file.

Facts: `launch_command`, `arg.<name>` (dashes to underscores; `--flag` alone is `true`,
`--no-flag` is `<flag>=false`; the positional model of `vllm serve` is `arg.model`), `image`,
`docker.<option>`, `env.<NAME>`, `cuda_visible_devices`. Values of secrets (`--api-key`,
`HF_TOKEN`, …) are replaced by `<redacted>` in facts; the lines themselves stay as they are.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

import polars as pl
import yaml

from k3forensics.sources import _doc_util as du
from k3forensics.sources.base import ParseContext, ParseResult

NAME = "launch"

_PREFIXES = r"(?:(?:sudo|exec|nohup|time|setsid|env|uv run|poetry run|[A-Za-z_][A-Za-z0-9_]*=\S*)\s+)*"
_LAUNCHER = (
    r"(?:\S*/)?(?:vllm\s+serve\b|python[0-9.]*\s+(?:-u\s+)?-m\s+vllm\.entrypoints\.|(?:docker|podman|nerdctl)\s+run\b)"
)
# A line that starts a launch: after an optional `$ ` / `+ ` prompt, an optional `cd … &&`,
# wrappers (`nohup`, `exec`, …) and environment assignments.
COMMAND_START = rf"^\s*(?:[$+]\s+|ExecStart=[-@+!:]*)?(?:[^#\n]*?(?:&&|;)\s*)?{_PREFIXES}{_LAUNCHER}"
# `export A=…` in a script, `Environment=A=…` in a systemd unit
EXPORT = r"^\s*(?:export\s+|Environment=)[\"']?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*?)\s*$"
ASSIGN = r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S*)\s*$"

# Secret-bearing names: a *token* value (HF_TOKEN, --hf-token), not flags about tokens
# (--enable-prompt-tokens-details, --max-num-batched-tokens).
_SECRET = re.compile(r"(?i)(?:^|[_-])(?:token|secret|password|passwd|api[_-]?key|access[_-]?key)$|(?:^|[_-])(?:hf|auth|api|access|bearer)[_-]?token")
# vLLM flags that take no value: a token after them is the next argument, not their value.
_BOOLEAN_FLAGS = {
    "enforce_eager", "trust_remote_code", "enable_prefix_caching", "enable_chunked_prefill",
    "disable_log_stats", "disable_log_requests", "enable_log_requests", "enable_auto_tool_choice",
    "disable_custom_all_reduce", "enable_expert_parallel", "enable_lora", "headless", "async_scheduling",
    "disable_frontend_multiprocessing", "disable_uvicorn_access_log", "enable_sleep_mode", "enable_eplb",
    "disable_fastapi_docs", "enable_reasoning", "skip_tokenizer_init", "enable_server_load_tracking",
    "enable_prompt_tokens_details", "enable_force_include_usage", "disable_sliding_window",
}
_SHORT_FLAGS = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
                "q": "quantization", "O": "compilation_config"}
_DOCKER_BOOL = {"rm", "detach", "interactive", "tty", "privileged", "init", "read_only", "publish_all"}
_DOCKER_SHORT = {"e": "env", "v": "volume", "p": "publish", "w": "workdir", "u": "user", "m": "memory",
                 "h": "hostname", "l": "label", "d": "detach", "i": "interactive", "t": "tty", "P": "publish_all"}
# Keys of a vLLM `--config` YAML file that no other YAML file is likely to have at top level.
_CONFIG_KEYS = re.compile(
    r"^(?:tensor[-_]parallel[-_]size|gpu[-_]memory[-_]utilization|max[-_]model[-_]len|max[-_]num[-_]seqs"
    r"|enforce[-_]eager|kv[-_]cache[-_]dtype|served[-_]model[-_]name|pipeline[-_]parallel[-_]size)\s*:",
    re.MULTILINE,
)
_REDIRECT = re.compile(r"(?:^|(?<=\s))\d*(?:&>>?|>>?|<)(?:&\d+|\s*[^\s;&|]+)")


@dataclass
class Launch:
    """One recognised launch: what ran, with which arguments and environment."""

    tokens: list[str]
    image: str | None = None
    args: list[tuple[str, str]] = field(default_factory=list)
    env: list[tuple[str, str]] = field(default_factory=list)
    docker: list[tuple[str, str]] = field(default_factory=list)


def detect(head: str) -> bool:
    if du.looks_like_log(head) or _looks_like_describe(head):
        return False
    joined = re.sub(r"\\\n", " ", head)
    for match in re.finditer(COMMAND_START + r".*$", joined, re.MULTILINE):
        line = match.group(0)
        if not re.search(r"docker|podman|nerdctl", line.split("run")[0]) or "vllm" in line:
            return True
    if re.search(r"^\s*-?\s*image:\s*['\"]?\S*vllm", head, re.MULTILINE):
        return bool(re.search(r"^\s*(?:-\s*)?(?:args|command|entrypoint):", head, re.MULTILINE))
    return len(_CONFIG_KEYS.findall(head)) >= 2


def parse(lines: pl.DataFrame, ctx: ParseContext) -> ParseResult:
    text = "\n".join(lines.get_column("text").fill_null("").to_list())
    if _is_yaml(text):
        facts, warnings = _yaml_facts(text, lines, ctx)
        parsed = pl.col("text").str.contains(r"^\s*(?:-\s+)?[\w.-]+:|^\s*-\s+\S")
        return ParseResult(events=du.build_events(lines, NAME, parsed=parsed), facts=facts, warnings=warnings)
    work = _logical_lines(lines)
    variables = _variables(work)
    commands = work.filter(pl.col("_logical").str.contains(COMMAND_START))
    parts = [_export_facts(work)]
    heads = commands.select("_cmd", "_logical", "line_no").unique("_cmd", keep="first", maintain_order=True)
    for cmd_id, logical, first in heads.iter_rows():  # one row per launch command, not per line
        launch = parse_command(_substitute(logical, variables))
        if launch is not None:
            group = work.filter(pl.col("_cmd") == cmd_id)
            parts.append(launch_facts(launch, first, flag_lines(group)))
    recognised = pl.col("_cmd").is_in(commands.get_column("_cmd").implode()) | pl.col("text").str.contains(EXPORT)
    events = du.build_events(lines, NAME, work=work, parsed=recognised)
    return ParseResult(events=events, facts=du.concat_facts(parts))


# ---------------------------------------------------------------- shell text


def _logical_lines(lines: pl.DataFrame) -> pl.DataFrame:
    """Join backslash continuations: `_cmd` numbers logical lines, `_logical` is the joined text."""
    text = pl.col("text").fill_null("")
    cont = text.str.contains(r"\\\s*$")
    work = lines.with_columns((~cont.shift(1).fill_null(False)).cum_sum().alias("_cmd"))
    joined = work.group_by("_cmd", maintain_order=True).agg(
        text.str.replace(r"\\\s*$", "").str.join(" ").alias("_logical")
    )
    return work.join(joined, on="_cmd", how="left", maintain_order="left")


def _variables(work: pl.DataFrame) -> dict[str, str]:
    """Shell variables set in the script (`export A=…`, `A=…`), for `$A` in the command."""
    found = work.select(
        pl.coalesce(pl.col("text").str.extract(EXPORT, 1), pl.col("text").str.extract(ASSIGN, 1)).alias("n"),
        pl.coalesce(pl.col("text").str.extract(EXPORT, 2), pl.col("text").str.extract(ASSIGN, 2)).alias("v"),
    ).drop_nulls()
    return {n: _unquote(v) for n, v in found.iter_rows()}


def _substitute(command: str, variables: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1) or match.group(3), match.group(2)
        if name in variables:
            return variables[name]
        return default if default is not None else match.group(0)

    return re.sub(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)", value, command)


def _unquote(value: str) -> str:
    quoted = re.fullmatch(r"\"(.*)\"|'(.*)'", value.strip())
    return (quoted.group(1) if quoted.group(1) is not None else quoted.group(2)) if quoted else value.strip()


def _export_facts(work: pl.DataFrame) -> pl.DataFrame:
    exports = work.with_columns(pl.col("text").str.extract_groups(EXPORT).alias("g")).unnest("g")
    exports = exports.filter(pl.col("name").is_not_null())
    value = pl.col("value").str.replace(r"^\"(.*)\"$|^'(.*)'$", "$1$2").str.replace(r"^([^\"']*)[\"']$", "$1")
    secret = pl.col("name").str.contains(_SECRET.pattern)
    redacted = pl.when(secret).then(pl.lit("<redacted>")).otherwise(value)
    visible = exports.filter(pl.col("name") == "CUDA_VISIBLE_DEVICES")
    return du.concat_facts([
        du.facts_from_frame(exports, pl.format("env.{}", "name"), redacted),
        du.facts_from_frame(visible, pl.lit("cuda_visible_devices"), value),
    ])


def tokenize(command: str) -> list[str]:
    """Shell words of a command line; redirections dropped, `;` `&&` `|` kept as tokens."""
    lexer = shlex.shlex(_REDIRECT.sub(" ", command), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quote in a pasted line: fall back to plain words
        return command.split()


# ---------------------------------------------------------------- commands


def parse_command(command: str | list[str]) -> Launch | None:
    """The launch in a command line (or its words), or None if it starts no vLLM server."""
    tokens = tokenize(command) if isinstance(command, str) else list(command)
    for segment in _segments(tokens):
        launch = _parse_segment(segment)
        if launch is not None:
            return launch
    return None


def _segments(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for tok in tokens:
        if tok and set(tok) <= set(";&|"):
            out.append([])
        else:
            out[-1].append(tok)
    return [s for s in out if s]


def _parse_segment(tokens: list[str]) -> Launch | None:
    env: list[tuple[str, str]] = []
    if tokens and tokens[0].startswith("ExecStart="):  # a systemd unit
        tokens = [tokens[0].split("=", 1)[1].lstrip("-@+!:"), *tokens[1:]]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in {"$", "+", "sudo", "exec", "nohup", "time", "setsid", "env"}:
            i += 1
        elif tok in {"uv", "poetry"} and i + 1 < len(tokens) and tokens[i + 1] == "run":
            i += 2
        elif re.fullmatch(r"[A-Za-z_]\w*=.*", tok):
            env.append(tuple(tok.split("=", 1)))  # type: ignore[arg-type]
            i += 1
        else:
            break
    rest = [_program(tokens[i]), *tokens[i + 1:]] if i < len(tokens) else []
    launch = _server_command(rest) or _docker_command(rest) or _shell_c(rest)
    if launch is not None:
        launch.env = env + launch.env
        launch.tokens = tokens  # the whole segment: inline assignments and wrappers included
    return launch


def _program(word: str) -> str:
    """`/opt/venv/bin/vllm` -> `vllm`: where the program lives does not change what it is."""
    return word.rsplit("/", 1)[-1] if re.fullmatch(r"\S*/(?:vllm|python[0-9.]*|docker|podman|nerdctl)", word) else word


def _server_command(tokens: list[str]) -> Launch | None:
    if len(tokens) >= 2 and tokens[0] == "vllm" and tokens[1] == "serve":
        return Launch(tokens=tokens, args=vllm_args(tokens[2:], positional_model=True))
    if len(tokens) >= 3 and re.fullmatch(r"python[0-9.]*", tokens[0]):
        rest = tokens[1:]
        if rest[0] == "-u":
            rest = rest[1:]
        if len(rest) >= 2 and rest[0] == "-m" and rest[1].startswith("vllm.entrypoints"):
            serve = rest[1].endswith("cli.main") and len(rest) > 2 and rest[2] == "serve"
            return Launch(tokens=tokens, args=vllm_args(rest[3:] if serve else rest[2:], positional_model=serve))
    return None


def _shell_c(tokens: list[str]) -> Launch | None:
    """`bash -c "vllm serve …"` (a common container command)."""
    if len(tokens) >= 3 and re.fullmatch(r"(?:/\S*/)?(?:ba|z)?sh", tokens[0]) and tokens[1] in {"-c", "-lc", "-ec"}:
        return parse_command(tokens[2])
    return None


def _docker_command(tokens: list[str]) -> Launch | None:
    if len(tokens) < 3 or tokens[0] not in {"docker", "podman", "nerdctl"} or tokens[1] != "run":
        return None
    options: list[tuple[str, str]] = []
    i = 2
    while i < len(tokens) and tokens[i].startswith("-"):
        name, value, i = _docker_option(tokens, i)
        options.append((name, value))
    if i >= len(tokens):
        return None
    image, container = tokens[i], tokens[i + 1:]
    entry = [v for n, v in options if n == "entrypoint"]
    inner = _server_command(shlex.split(entry[0]) + container if entry else container)
    if inner is None and "vllm" not in image and not _shell_c(container):
        return None
    if inner is None:
        inner = _shell_c(container) or Launch(tokens=container, args=vllm_args(container, positional_model=True))
    env = [tuple(v.split("=", 1)) if "=" in v else (v, "(inherited)") for n, v in options if n == "env"]
    docker = [(n, v) for n, v in options if n != "env"]
    return Launch(tokens=tokens, image=image, args=inner.args, env=env + inner.env, docker=docker)  # type: ignore[arg-type]


def _docker_option(tokens: list[str], i: int) -> tuple[str, str, int]:
    tok = tokens[i]
    if tok.startswith("--"):
        name, eq, value = tok[2:].partition("=")
        name = name.replace("-", "_")
        if eq or name in _DOCKER_BOOL:
            return name, value if eq else "true", i + 1
        return name, tokens[i + 1] if i + 1 < len(tokens) else "", i + 2
    letters = tok[1:]
    if re.fullmatch(r"[ditP]+", letters):  # combined boolean short flags: -it, -d, -itd
        return "+".join(_DOCKER_SHORT[c] for c in letters), "true", i + 1
    name = _DOCKER_SHORT.get(letters[0], letters[0])
    if len(letters) > 1:  # -eNAME=value, -p8000:8000
        return name, letters[1:].lstrip("="), i + 1
    return name, tokens[i + 1] if i + 1 < len(tokens) else "", i + 2


def vllm_args(tokens: list[str], positional_model: bool = False) -> list[tuple[str, str]]:
    """`--flag value` / `--flag=value` / `--flag` / `--no-flag` / `-tp 8` → (name, value) pairs."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        takes = nxt is not None and (not nxt.startswith("-") or re.fullmatch(r"-\d+(?:\.\d+)?", nxt) is not None)
        if tok.startswith("--") and len(tok) > 2:
            name, eq, value = tok[2:].partition("=")
            key = name.replace("-", "_")
            if eq:
                out.append((key, value))
            elif takes and key not in _BOOLEAN_FLAGS and not key.startswith("no_"):
                out.append((key, nxt))  # type: ignore[arg-type]
                i += 1
            elif key.startswith("no_"):
                out.append((key[3:], "false"))
            else:
                out.append((key, "true"))
        elif re.fullmatch(r"-(tp|pp|dp|q)", tok) and nxt is not None:
            out.append((_SHORT_FLAGS[tok[1:]], nxt))
            i += 1
        elif re.fullmatch(r"-O\.?\d+", tok):
            out.append(("compilation_config", tok.lstrip("-O.")))
        elif positional_model and not tok.startswith("-") and not any(k == "model" for k, _ in out):
            out.append(("model", tok))
        i += 1
    return out


# ---------------------------------------------------------------- facts


def flag_lines(group: pl.DataFrame) -> dict[str, int]:
    """First line (of a command's few lines, `line_no` and `text`) on which each `--flag` appears."""
    found: dict[str, int] = {}
    for line_no, text in group.select("line_no", "text").iter_rows():  # the few lines of one command
        for flag in re.findall(r"(?:^|\s)--?([A-Za-z][\w.-]*)", text or ""):
            found.setdefault(flag.replace("-", "_").removeprefix("no_"), line_no)
    return found


def _redact(name: str, value: str) -> str:
    return "<redacted>" if _SECRET.search(name) else value


def launch_facts(launch: Launch, line_no: int, lines_of: dict[str, int] | None = None) -> pl.DataFrame:
    """Facts of one launch; `lines_of` maps a flag name to the line it is on."""
    where = lines_of or {}
    shown = _redacted_tokens(launch.tokens)
    rows: list[tuple[str, str, int]] = [("launch_command", shlex.join(shown), line_no)]
    if launch.image:
        rows.append(("image", launch.image, line_no))
    rows += [(f"docker.{n}", v, where.get(n, line_no)) for n, v in launch.docker]
    rows += [(f"env.{n}", _redact(n, v), line_no) for n, v in launch.env]
    rows += [("cuda_visible_devices", v, line_no) for n, v in launch.env if n == "CUDA_VISIBLE_DEVICES"]
    rows += [(f"arg.{n}", _redact(n, v), where.get(n, line_no)) for n, v in launch.args]
    return du.facts_from_rows(rows)


def _redacted_tokens(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else ""
        if "=" in tok and _SECRET.search(tok.split("=", 1)[0]):
            out.append(tok.split("=", 1)[0] + "=<redacted>")
        elif prev.startswith("-") and _SECRET.search(prev) and not tok.startswith("-"):
            out.append("<redacted>")
        else:
            out.append(tok)
    return out


# ---------------------------------------------------------------- YAML manifests and config files


def _is_yaml(text: str) -> bool:
    head = text[:8192]
    return bool(
        re.search(r"^\s*-?\s*image:\s*['\"]?\S*vllm", head, re.MULTILINE) or len(_CONFIG_KEYS.findall(head)) >= 2
    ) and not re.search(COMMAND_START, head, re.MULTILINE)


def _yaml_facts(text: str, lines: pl.DataFrame, ctx: ParseContext) -> tuple[pl.DataFrame, list[str]]:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        return du.empty_facts(), [f"launch YAML could not be read: {str(exc).splitlines()[0]}"]
    facts = []
    for doc in docs:
        if isinstance(doc, dict) and _CONFIG_KEYS.search("\n".join(f"{k}:" for k in doc)):
            args = [(str(k).replace("-", "_"), _scalar(v)) for k, v in doc.items()]
            launch = Launch(tokens=["vllm", "serve", "--config", ctx.file], args=args)
            facts.append(launch_facts(launch, 1, _yaml_lines(lines, args)))
            continue
        for box in _containers(doc):
            facts.append(_container_facts(box, lines))
    return du.concat_facts(facts), []


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _containers(node: object) -> list[dict[str, object]]:
    """Every mapping with an `image` and a command or arguments (k8s container, compose service)."""
    found: list[dict[str, object]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("image"), str) and any(k in item for k in ("args", "command", "entrypoint")):
                found.append(item)
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def _words(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return tokenize(str(value)) if value else []


def _container_facts(box: dict[str, object], lines: pl.DataFrame) -> pl.DataFrame:
    image = str(box["image"])
    words = _words(box.get("entrypoint")) + _words(box.get("command")) + _words(box.get("args"))
    inner = parse_command(words) if words else None
    if inner is None:
        inner = Launch(tokens=words, args=vllm_args(words, positional_model=True))
    env = box.get("env") or box.get("environment") or []
    pairs: list[tuple[str, str]] = []
    if isinstance(env, dict):
        pairs = [(str(k), _scalar(v)) for k, v in env.items()]
    elif isinstance(env, list):
        for item in env:
            if isinstance(item, dict) and "name" in item:
                pairs.append((str(item["name"]), _scalar(item.get("value", "(from " + ",".join(item) + ")"))))
            elif isinstance(item, str):
                name, _, value = item.partition("=")
                pairs.append((name, value))
    image_line = _first_line(lines, [image], 1)
    launch = Launch(tokens=words, image=image, args=inner.args, env=pairs + inner.env)
    return launch_facts(launch, image_line, _yaml_lines(lines, inner.args, image_line))


def _yaml_lines(lines: pl.DataFrame, args: list[tuple[str, str]], start: int = 1) -> dict[str, int]:
    """The line at or after `start` that names each argument (`--max-model-len`, `max-model-len:`);
    a positional one (the model) is found by its value."""
    found: dict[str, int] = {}
    for name, value in args:
        dashed = name.replace("_", "-")
        needles = [f"--{dashed}", f"--{name}", f"{dashed}:", f"{name}:"]
        hit = _first_line(lines, needles, start, default=0) or _first_line(lines, [value], start, default=start)
        found.setdefault(name, hit)
    return found


def _first_line(lines: pl.DataFrame, needles: list[str], start: int, default: int | None = None) -> int:
    hits = lines.filter((pl.col("line_no") >= start) & pl.col("text").str.contains_any(needles))
    first = hits.get_column("line_no").min()
    return int(first) if first is not None else (start if default is None else default)  # type: ignore[arg-type]


def _looks_like_describe(head: str) -> bool:
    return bool(re.search(r"^Name:\s+\S", head, re.MULTILINE) and re.search(r"^Namespace:\s+\S", head, re.MULTILINE))
