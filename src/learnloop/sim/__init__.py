"""learnloop.sim."""
