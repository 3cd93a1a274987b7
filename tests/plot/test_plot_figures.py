"""learnloop.plot draws what it is given: the figures' data is checked, not only that they draw."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from learnloop import Engine
from learnloop.plot import (
    by_opportunity,
    learning_curves,
    padded,
    reliability_bins,
    reliability_diagram,
    topic_graph,
    topic_layout,
    topic_mastery,
)
from learnloop.sim import sample_course
from learnloop.tracing import expected_calibration_error


@pytest.fixture
def ax() -> Iterator[object]:
    yield Figure().subplots()


# -- learning curves ---------------------------------------------------------------------------


def test_learning_curve_is_the_mean_per_step_with_a_95_percent_band(ax: object) -> None:
    rows = [[0.2, 0.4, 0.9], [0.4, 0.8, 0.7], [0.6, 0.6]]
    learning_curves({"learn": rows, "random": [[0.1, 0.2]]}, ax=ax)
    learn, random = ax.lines  # type: ignore[attr-defined]
    assert learn.get_xdata().tolist() == [0, 1, 2]
    np.testing.assert_allclose(learn.get_ydata(), [0.4, 0.6, 0.8])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["learn", "random"]  # type: ignore[attr-defined]
    band = [c for c in ax.collections if isinstance(c, PolyCollection)][0]  # type: ignore[attr-defined]
    ys = band.get_paths()[0].vertices[:, 1]
    half = 1.96 * 0.2 / np.sqrt(3)  # sd of (0.2, 0.4, 0.6) is 0.2
    assert ys.max() == pytest.approx(0.8 + 1.96 * np.std([0.9, 0.7], ddof=1) / np.sqrt(2))
    assert ys.min() == pytest.approx(0.4 - half)
    np.testing.assert_allclose(random.get_ydata(), [0.1, 0.2])


def test_learning_curve_drops_steps_with_too_few_learners(ax: object) -> None:
    learning_curves([[1.0, 0.0, 1.0], [0.0, 1.0]], ax=ax, min_count=2, band=False, ylabel="P(correct)")
    (line,) = ax.lines  # type: ignore[attr-defined]
    assert line.get_xdata().tolist() == [0, 1]
    assert line.get_ydata().tolist() == [0.5, 0.5]
    assert ax.get_legend() is None and ax.get_ylabel() == "P(correct)"  # type: ignore[attr-defined]
    assert not ax.collections  # type: ignore[attr-defined]


def test_padded_and_by_opportunity_match_a_plain_loop() -> None:
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 7, 200)
    values = rng.random(200)
    rows: dict[int, list[float]] = {}
    for g, v in zip(groups.tolist(), values.tolist(), strict=True):
        rows.setdefault(g, []).append(v)
    expected = padded(list(rows.values()))
    np.testing.assert_array_equal(by_opportunity(groups, values), expected)
    assert padded(np.ones((2, 3))).shape == (2, 3)
    with pytest.raises(ValueError, match="differ in length: 2 != 1"):
        by_opportunity([1, 2], [0.5])


# -- reliability ---------------------------------------------------------------------------------


def test_reliability_bins_agree_with_the_ece_and_a_hand_count() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(5000)
    y = (rng.random(5000) < p**1.3).astype(float)
    bins = reliability_bins(y, p, n_bins=10)
    assert bins.ece == pytest.approx(expected_calibration_error(y, p, n_bins=10))
    in_third = (p >= 0.2) & (p < 0.3)
    assert bins.count[2] == in_third.sum()
    assert bins.observed[2] == pytest.approx(y[in_third].mean())
    assert bins.predicted[2] == pytest.approx(p[in_third].mean())
    assert bins.count.sum() == 5000


def test_reliability_diagram_draws_bins_beside_the_diagonal(ax: object) -> None:
    rng = np.random.default_rng(2)
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(float)
    reliability_diagram(y, p, ax=ax, label="model A")
    reliability_diagram(y, np.clip(p + 0.2, 0, 1), ax=ax, label="model B")
    diagonal, a, b = ax.lines  # type: ignore[attr-defined]
    assert diagonal.get_xdata().tolist() == [0.0, 1.0] and diagonal.get_ydata().tolist() == [0.0, 1.0]
    bins = reliability_bins(y, p)
    np.testing.assert_allclose(a.get_xdata(), bins.predicted)
    np.testing.assert_allclose(a.get_ydata(), bins.observed)
    assert a.get_label() == f"model A (ECE {bins.ece:.3f})"
    shifted = reliability_bins(y, np.clip(p + 0.2, 0, 1))
    assert b.get_label() == f"model B (ECE {shifted.ece:.3f})" and shifted.ece > bins.ece + 0.1
    bars = [r for r in ax.patches if isinstance(r, Rectangle)]  # type: ignore[attr-defined]
    assert len(bars) == 10
    assert sum(r.get_height() for r in bars) == pytest.approx(1.0)


def test_reliability_bins_reject_mismatched_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        reliability_bins([1, 0], [0.5])
    with pytest.raises(ValueError, match="n_bins must be at least 1, got 0"):
        reliability_bins([1], [0.5], n_bins=0)


# -- topic graph --------------------------------------------------------------------------------


ITEMS, CATALOG = sample_course(n_chapters=2, topics_per_chapter=3, items_per_topic=4)


def test_topic_graph_colours_topics_by_mastery_and_draws_each_prerequisite(ax: object) -> None:
    mastery = {"ch1-t1": 0.9, "ch1-t2": 0.1, "ch2": None}
    topic_graph(CATALOG, mastery, ax=ax, cmap="viridis")
    nodes = [c for c in ax.collections if isinstance(c, PathCollection)][0]  # type: ignore[attr-defined]
    order = [t.topic_id for t in CATALOG.topics]
    colours = nodes.get_facecolors()
    cmap = matplotlib.colormaps["viridis"]
    np.testing.assert_allclose(colours[order.index("ch1-t1")], cmap(0.9))
    np.testing.assert_allclose(colours[order.index("ch1-t2")], cmap(0.1))
    np.testing.assert_allclose(colours[order.index("ch2")], to_rgba("lightgrey"))
    layout = topic_layout(CATALOG)
    np.testing.assert_allclose(nodes.get_offsets(), [layout[t] for t in order])
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]  # type: ignore[attr-defined]
    n_prerequisites = sum(len(t.prerequisite_topic_refs or ()) for t in CATALOG.topics)
    assert n_prerequisites == 5 and len(arrows) == n_prerequisites
    assert sorted(t.get_text() for t in ax.texts) == sorted(order)  # type: ignore[attr-defined]
    assert len(ax.figure.axes) == 2  # type: ignore[attr-defined]  # the colour bar


def test_topic_layout_puts_parents_above_the_middle_of_their_children() -> None:
    layout = topic_layout(CATALOG)
    assert layout["ch1"] == (1.0, 0.0) and layout["ch2"] == (4.0, 0.0)
    assert [layout[f"ch1-t{k}"] for k in (1, 2, 3)] == [(0.0, -1.0), (1.0, -1.0), (2.0, -1.0)]


def test_topic_mastery_follows_the_learner() -> None:
    engine = Engine(seed=3)
    engine.upsert_items(ITEMS)
    engine.upsert_catalog(CATALOG)
    before = topic_mastery(engine, "u1", CATALOG.catalog_id)
    events = [
        {
            "type": "attempt",
            "item_id": f"ch1-t1-q{k}",
            "catalog_id": CATALOG.catalog_id,
            "timestamp": f"2025-01-06T09:0{k}:00Z",
            "score": 1.0,
        }
        for k in range(1, 5)
    ]
    engine.upsert_events("u1", events)
    after = topic_mastery(engine, "u1", CATALOG.catalog_id)
    assert set(after) == {t.topic_id for t in CATALOG.topics}
    assert after["ch1-t1"] > before["ch1-t1"] + 0.1  # type: ignore[operator]
    assert all(v is not None and 0.0 <= v <= 1.0 for v in after.values())


def test_functions_return_pyplot_figures_when_no_axes_are_given() -> None:
    import matplotlib.pyplot as plt

    ax = learning_curves([[0.5, 0.6]])
    try:
        assert ax.figure in [plt.figure(n) for n in plt.get_fignums()]
    finally:
        plt.close("all")


# -- optional dependency --------------------------------------------------------------------------


def test_plot_imports_without_matplotlib_and_a_call_says_what_to_install() -> None:
    code = (
        "import sys\nsys.modules['matplotlib'] = None\n"
        "import learnloop.plot\n"
        "try:\n    learnloop.plot.learning_curves([[0.5]])\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "learnloop.plot needs matplotlib: pip install 'learnloop[plot]'"


def test_import_learnloop_plot_does_not_load_matplotlib() -> None:
    code = "import sys, learnloop.plot\nprint('matplotlib' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"
