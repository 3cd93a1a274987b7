"""learnloop.tracing."""
