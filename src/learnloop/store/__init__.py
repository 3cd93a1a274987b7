"""learnloop.store."""
