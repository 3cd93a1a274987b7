"""learnloop.voice."""
