"""Part 4: fitting a catalog's learner model to the engine's own event log (``Engine.fit``)."""
