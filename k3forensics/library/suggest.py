"""`signatures suggest`: the error-like lines no signature explained, grouped into templates.

How a team grows its library after a new incident: numbers, hex, paths, addresses and
ranks are masked so one template stands for all its instances; the most frequent come
first, each with a ready-to-edit signature skeleton.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl
import yaml

# Words that make a line worth a look when no signature knows it (a heuristic for
# finding candidates, not a diagnosis: diagnoses live in signatures).
ERROR_WORDS = r"(?i)\b(?:error|errors|failed|failure|fatal|exception|abort(?:ed)?|panic|denied|refused|timed? ?out|killed|segfault|unable|cannot|could not)\b"
# Order matters: the specific shapes before the bare numbers.
MASKS: list[tuple[str, str]] = [
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<UUID>"),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b", "<IP>"),
    (r"(?:[A-Za-z]:)?(?:/[\w.@+-]+){2,}/?", "<PATH>"),
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>"),
    (r"\b[0-9a-fA-F]{12,}\b", "<HEX>"),
    (r"\b\d+(?:\.\d+)?\b", "<N>"),
]
MASK_TOKEN = re.compile(r"<(?:UUID|IP|PATH|HEX|N)>")


@dataclass(frozen=True)
class Template:
    template: str
    count: int
    files: int
    example_file: str
    example_line_no: int
    example_line: str

    def skeleton(self, index: int) -> dict[str, object]:
        literal = longest_literal(self.template)
        return {
            "id": f"team.unexplained-{index}",
            "title": f"TODO: name this failure ({literal[:60]})",
            "category": "unknown",
            "role": "primary",
            "severity": "error",
            "status": "experimental",
            "match": f"matches {quote(template_regex(self.template))}" if len(literal) < 12
            else f"contains {quote(literal)}",
            "remediation": {"action": "investigate", "text": "TODO: what should the on-call engineer do?"},
            "examples": {"match": [self.example_line], "no_match": []},
        }


def mask(expr: pl.Expr) -> pl.Expr:
    for pattern, token in MASKS:
        expr = expr.str.replace_all(pattern, token)
    return expr.str.replace_all(r"\s+", " ").str.strip_chars()


def longest_literal(template: str) -> str:
    pieces = [p.strip() for p in MASK_TOKEN.split(template)]
    return max(pieces, key=len) if pieces else template


def template_regex(template: str) -> str:
    parts = MASK_TOKEN.split(template)
    return r"\S+".join(re.escape(p) for p in parts)


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def unexplained(events: pl.DataFrame, hits: pl.DataFrame, limit: int = 20) -> list[Template]:
    """Error-like lines that no signature hit, grouped by masked template, most frequent first."""
    explained_groups = hits.filter(pl.col("tb_group").is_not_null()).get_column("tb_group").unique().implode()
    explained = hits.get_column("seq").unique().implode()
    message = pl.col("message").fill_null("")
    candidates = events.lazy().filter(
        ~pl.col("seq").is_in(explained)
        & ~(pl.col("tb_group").is_in(explained_groups).fill_null(False))
        & (pl.col("level").is_in(["ERROR", "CRITICAL"]).fill_null(False) | message.str.contains(ERROR_WORDS)
           | pl.col("exception").is_not_null())
        # Traceback frames and code lines say where, not what.
        & ~message.str.contains(r'^\s+File "|^\s{2,}\S|^\s*[\^~]+\s*$|^Traceback \(most recent call last\)')
        & (message.str.strip_chars().str.len_chars() > 8)
    )
    grouped = (
        candidates.with_columns(mask(message).alias("template"))
        .sort("seq")
        .group_by("template")
        .agg(pl.len().alias("count"), pl.col("file").n_unique().alias("files"), pl.col("file").first(),
             pl.col("line_no").first(), pl.col("line").first())
        .sort(["count", "template"], descending=[True, False])
        .head(limit)
        .collect()
    )
    return [Template(r["template"], r["count"], r["files"], r["file"], r["line_no"], r["line"])
            for r in grouped.iter_rows(named=True)]


def skeletons_yaml(templates: list[Template]) -> str:
    body = {"signatures": [t.skeleton(i + 1) for i, t in enumerate(templates)]}
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=120)
