"""k3forensics: offline forensic triage of crashed LLM inference servers."""

__version__ = "0.1.0"
