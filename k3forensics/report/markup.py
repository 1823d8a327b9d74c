"""Ticket markup dialects: GitHub/GitLab Markdown and Jira wiki markup.

Log text always goes into code spans or code blocks (never interpreted: no HTML, no
@mentions, no #issue links); free text from signatures is escaped. A dialect is a small
table of how to write each element, so a new tracker is mostly a new class.
"""

from __future__ import annotations

import html
import re

INLINE_MAX = 160


def _clip(text: str, limit: int = INLINE_MAX) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Markdown:
    name = "md"

    def h(self, level: int, text: str) -> str:
        return "#" * level + " " + text

    def esc(self, text: str) -> str:
        out = re.sub(r"([\\`*\[\]<>#|~@!])", r"\\\1", str(text))
        # An underscore inside a word (`driver_incompatible`) never starts emphasis in GFM.
        return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", out)

    def code(self, text: object, limit: int = INLINE_MAX) -> str:
        body = _clip(str(text), limit)
        longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
        fence = "`" * (longest + 1)
        pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
        return f"{fence}{pad}{body}{pad}{fence}"

    def cell(self, text: str) -> str:
        # GFM splits cells on `|` even inside code spans; the escape works there too.
        return text.replace("|", "\\|")

    def bold(self, text: str) -> str:
        return f"**{text}**"

    def block(self, lines: list[str]) -> list[str]:
        longest = max((len(m) for line in lines for m in re.findall(r"`{3,}", line)), default=0)
        fence = "`" * max(3, longest + 1)
        return [fence + "text", *lines, fence]

    def details(self, summary: str, lines: list[str]) -> list[str]:
        """A collapsed block; `summary` is plain text (an HTML line, so HTML-escaped, not Markdown-escaped)."""
        return ["<details><summary>" + html.escape(summary) + "</summary>", "", *self.block(lines), "",
                "</details>"]

    def table(self, header: list[str], rows: list[list[str]]) -> list[str]:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(self.cell(c) for c in row) + " |" for row in rows]
        return out

    def bullet(self, text: str) -> str:
        return "- " + text

    def small(self, text: str) -> str:
        return "<sub>" + text + "</sub>"


class Jira(Markdown):
    name = "jira"

    def h(self, level: int, text: str) -> str:
        return f"h{level}. {text}"

    def esc(self, text: str) -> str:
        return _jira_escape(str(text))

    def code(self, text: object, limit: int = INLINE_MAX) -> str:
        return "{{" + (_jira_escape(_clip(str(text), limit)) or " ") + "}}"

    def cell(self, text: str) -> str:
        return text

    def bold(self, text: str) -> str:
        return f"*{text}*"

    def block(self, lines: list[str]) -> list[str]:
        safe = [line.replace("{noformat}", "{ noformat}") for line in lines]
        return ["{noformat}", *safe, "{noformat}"]

    def details(self, summary: str, lines: list[str]) -> list[str]:
        return [self.bold(self.esc(summary)), *self.block(lines)]

    def table(self, header: list[str], rows: list[list[str]]) -> list[str]:
        out = ["||" + "||".join(header) + "||"]
        out += ["|" + "|".join(c or " " for c in row) + "|" for row in rows]
        return out

    def bullet(self, text: str) -> str:
        return "* " + text

    def small(self, text: str) -> str:
        return "??" + text + "??"


def _jira_escape(text: str) -> str:
    """Braces, brackets, pipes and `!` are markup anywhere; `*_?-+^~` only at a word's edge."""
    out = re.sub(r"([\\{}\[\]|!#])", r"\\\1", text)
    return re.sub(r"(?<![A-Za-z0-9])([*_?+^~-])|([*_?+^~-])(?![A-Za-z0-9])", lambda m: "\\" + m.group(0), out)
