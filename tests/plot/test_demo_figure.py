"""The demo's plot draws every mode whose gain the table reports, each beside its baseline, labelled."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.image import imread

from learnloop import demo


def test_the_figure_draws_learn_and_review_each_with_the_level_before_its_session() -> None:
    learn = np.array([[0.2, 0.3, 0.5, 0.6], [0.4, 0.5, 0.5, 0.8]])
    review = np.array([[0.5, 0.6], [0.7, 0.7]])
    fig = demo.figure({"learn": learn, "review": review}, np.array([0.3, 0.6]), np.array([0.35, 0.55]))
    curves, assessment = fig.axes
    lines = {line.get_label(): line for line in curves.lines}
    assert list(lines) == ["learn mode", "learn: before the session", "review mode", "review: before the session"]
    np.testing.assert_allclose(lines["learn mode"].get_ydata(), [0.3, 0.4, 0.5, 0.7])
    np.testing.assert_allclose(lines["review mode"].get_ydata(), [0.6, 0.65])
    # each baseline is the curve's first point, across the session, dashed, in the curve's colour
    for mode, start, steps in (("learn", 0.3, 3), ("review", 0.6, 1)):
        base = lines[f"{mode}: before the session"]
        np.testing.assert_allclose(base.get_ydata(), [start, start])
        assert list(base.get_xdata()) == [0, steps] and base.get_linestyle() == "--"
        assert base.get_color() == lines[f"{mode} mode"].get_color()
    legend = [t.get_text() for t in curves.get_legend().get_texts()]
    assert legend == list(lines)
    assert curves.get_xlabel() == "interaction in the session"
    assert [line.get_label() for line in assessment.lines] == ["estimate = truth"]
    assert [t.get_text() for t in assessment.get_legend().get_texts()] == ["learners", "estimate = truth"]


def test_the_demo_writes_the_plot_of_both_modes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn: list[dict[str, np.ndarray]] = []
    real = demo.figure
    monkeypatch.setattr(demo, "figure", lambda curves, *rest: drawn.append(dict(curves)) or real(curves, *rest))
    assert demo.main(["--out", str(tmp_path), "--learners", "2", "--steps", "6"]) == 0
    (curves,) = drawn
    assert set(curves) == {"learn", "review"}  # the table's two gains
    assert curves["learn"].shape == (2, 7) and curves["review"].shape == (2, 21)
    image = imread(tmp_path / "learning-curves.png")
    assert image.shape[0] > 300 and image.shape[1] > 1000
    assert "plot:     " + str((tmp_path / "learning-curves.png").resolve()) in capsys.readouterr().out
