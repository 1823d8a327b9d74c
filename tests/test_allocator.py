"""The command line sets polars' allocator before polars starts, and leaves a user's own setting."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SCRIPT = "import os, k3forensics.cli, polars; print(os.environ['_RJEM_MALLOC_CONF'])"


def _conf_seen_by_polars(user: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if user is not None:
        env["_RJEM_MALLOC_CONF"] = user
    # polars rewrites the variable when it starts, appending what it found: what it read shows.
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True, env=env)
    return done.stdout.strip()


def test_the_command_line_keeps_freed_pages_longer() -> None:
    assert _conf_seen_by_polars(None).endswith(",dirty_decay_ms:5000")


@pytest.mark.parametrize("user", ["dirty_decay_ms:0", "stats_print:false"])
def test_a_users_own_setting_is_kept(user: str) -> None:
    seen = _conf_seen_by_polars(user)
    assert seen.endswith("," + user) and "dirty_decay_ms:5000" not in seen
