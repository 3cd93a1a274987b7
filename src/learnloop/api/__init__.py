"""learnloop.api."""
