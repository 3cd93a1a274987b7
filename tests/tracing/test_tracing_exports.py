"""The public door of learnloop.tracing."""

from __future__ import annotations

import learnloop.tracing

EXPECTED = [
    "AbilityEstimate", "BKT", "BKTParams", "B_LIMIT", "Calibration", "DAY_SECONDS", "Event", "EventKind",
    "FSRS_WEIGHTS", "Forgetting", "ItemParams", "LearnerModel", "LearnerState", "Memory", "MemoryModel", "Sequences",
    "Status", "TopicStructure", "as_epoch_seconds", "auc", "b_to_difficulty", "bkt_p_correct", "bkt_step",
    "calibrate", "difficulty_to_b", "display_skill", "estimate_ability", "expected_calibration_error",
    "expected_p_correct", "fisher_information", "item_credit", "log_loss", "memory_trace", "p_correct", "predict_sequences",
    "proficiency", "progress", "recall_probability", "skill_level", "update_ability",
]  # fmt: skip


def test_all_is_sorted_and_complete() -> None:
    assert learnloop.tracing.__all__ == EXPECTED
    assert learnloop.tracing.__all__ == sorted(learnloop.tracing.__all__)
    for name in EXPECTED:
        assert getattr(learnloop.tracing, name) is not None


def test_tracing_imports_no_other_learnloop_package() -> None:
    import ast
    from pathlib import Path

    for path in Path(learnloop.tracing.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                assert not node.module.startswith("learnloop"), (path.name, node.module)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("learnloop") for a in node.names), path.name
