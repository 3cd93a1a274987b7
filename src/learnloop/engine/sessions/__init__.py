"""The sessions: creation, signed contexts, the adaptive step and its documents."""
