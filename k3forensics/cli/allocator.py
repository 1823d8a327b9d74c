"""Memory handed back less eagerly by polars' allocator, set before polars is imported.

polars asks its jemalloc to return freed pages to the system after half a second. A triage
frees and takes again chunk-sized buffers (16 MiB of text and their columns) many times a
second, so the pages went back and came again as page faults: 6 s of system time in a
40 s CPU budget at 1 GiB. Five seconds keeps them for the next chunks (measured at 1 GiB:
system time 6.3 → 4.2–4.7 s, the peak within the run-to-run spread; 30 s added 250 MiB to
it). A user's own `_RJEM_MALLOC_CONF` is left as it is; polars appends it to its defaults
either way.
"""

from __future__ import annotations

import os

_CONF = "_RJEM_MALLOC_CONF"  # jemalloc's settings, as polars' build of it reads them
os.environ.setdefault(_CONF, "dirty_decay_ms:5000")
