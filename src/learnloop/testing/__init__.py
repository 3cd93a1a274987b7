"""learnloop.testing."""
