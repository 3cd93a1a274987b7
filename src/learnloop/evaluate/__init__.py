"""Knowledge tracing measured on real learners: the next-response protocol.

:func:`evaluate` fits each model on a training log and predicts every
response of a test log from the same learner's earlier responses only (each
test response predicted once, before its answer is seen), then scores the
predictions (AUC, RMSE, log loss, calibration error). The models: baselines
(:class:`GlobalMean`, :class:`SkillMean`, :class:`ItemMean`), per-skill BKT
(:class:`BKTModel`) and the engine's own learner model (:class:`EngineModel`).

>>> from learnloop.datasets import from_columns
>>> from learnloop.sim import generate_irt
>>> data = generate_irt(300, 20, seed=1)
>>> log = from_columns({"u": data.person, "i": data.item, "c": data.score}, learner="u", item="i", correct="c")
>>> train, test = log.split(0.25, seed=0)
>>> report = evaluate([GlobalMean(), ItemMean(), EngineModel()], train, test)
>>> report["learnloop engine model"].auc > report["per-item mean"].auc > report["global mean"].auc
True
"""

from learnloop.evaluate._fit import DEFAULT_GRID, OptionsFit, fit_engine, fit_forgetting, fit_options
from learnloop.evaluate._models import BKTModel, EngineModel, GlobalMean, ItemMean, Model, SkillMean
from learnloop.evaluate._protocol import (
    GAP_BINS,
    Report,
    Result,
    by_gap,
    evaluate,
    metrics,
    reliability,
    skill_gaps,
)

__all__ = [
    "DEFAULT_GRID",
    "GAP_BINS",
    "BKTModel",
    "EngineModel",
    "GlobalMean",
    "ItemMean",
    "Model",
    "OptionsFit",
    "Report",
    "Result",
    "SkillMean",
    "by_gap",
    "evaluate",
    "fit_engine",
    "fit_forgetting",
    "fit_options",
    "metrics",
    "reliability",
    "skill_gaps",
]
