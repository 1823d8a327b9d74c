"""Triage: from the timeline and the signature hits to the first real failure and what to do."""
