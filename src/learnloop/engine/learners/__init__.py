"""The learners: their events, states, predictions and status, and the offline fits over a catalog's whole log."""
