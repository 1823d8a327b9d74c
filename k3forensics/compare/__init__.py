"""Compare runs: what changed between two bundles (`diff`), and whether several runs of one
command fail the same way (`repro`), per seed 001's minimal-reproduction rules."""
