"""learnloop.recommend."""
