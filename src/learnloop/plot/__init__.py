"""Plots for notebooks: learning curves, reliability diagrams and topic graphs coloured by mastery.

Needs matplotlib (``pip install 'learnloop[plot]'``); it is imported on
first use, so ``import learnloop.plot`` works without it and a call says what
to install. Every function draws on ``ax`` when given (else on a new pyplot
figure) and returns the axes.
"""

from learnloop.plot.calibration import ReliabilityBins, reliability_bins, reliability_diagram
from learnloop.plot.curves import by_opportunity, learning_curves, padded
from learnloop.plot.graph import topic_graph, topic_layout, topic_mastery

__all__ = [
    "ReliabilityBins",
    "by_opportunity",
    "learning_curves",
    "padded",
    "reliability_bins",
    "reliability_diagram",
    "topic_graph",
    "topic_layout",
    "topic_mastery",
]
