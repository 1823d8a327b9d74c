"""The timeline: every line of a bundle as an event in one DuckDB file."""
