"""Verdicts over a triaged timeline: compatibility baseline, prefix-cache reuse, agent API
correctness, acceptance (seed 003) and tune-or-scale (seed 000)."""
