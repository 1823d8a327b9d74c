"""The signature library: YAML files of signatures, their condition language, and matching."""
