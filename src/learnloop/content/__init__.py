"""learnloop.content."""
