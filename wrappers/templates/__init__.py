"""Per-env prompt templates and parsers; one module per env, each defining ``SPEC``."""
