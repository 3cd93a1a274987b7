"""BKT: golden step, filtering, EM recovery, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from learnloop.sim import generate_bkt
from learnloop.tracing import BKT, BKTParams, Sequences, bkt_p_correct, bkt_step, predict_sequences
from learnloop.tracing.metrics import auc, expected_calibration_error

PARAMS = BKTParams(prior=0.3, learn=0.2, guess=0.2, slip=0.1)


def test_golden_step_correct_answer() -> None:
    # P(correct) = 0.3 * 0.9 + 0.7 * 0.2 = 0.27 + 0.14 = 0.41
    assert float(bkt_p_correct(0.3, PARAMS)) == pytest.approx(0.41)
    # posterior = 0.27 / 0.41 = 0.658536585...; then 0.658536585 + 0.341463415 * 0.2 = 0.726829268
    assert float(bkt_step(0.3, 1, PARAMS)) == pytest.approx(0.7268292682926829, abs=1e-12)


def test_golden_step_wrong_answer() -> None:
    # posterior = 0.3 * 0.1 / (0.03 + 0.7 * 0.8) = 0.03 / 0.59 = 0.050847458
    # then 0.050847458 + 0.949152542 * 0.2 = 0.240677966
    assert float(bkt_step(0.3, 0, PARAMS)) == pytest.approx(0.24067796610169492, abs=1e-12)


def test_forgetting_step() -> None:
    params = BKTParams(prior=0.5, learn=0.1, guess=0.2, slip=0.1, forget=0.05)
    # posterior = 0.45 / (0.45 + 0.1) = 0.818181818; 0.818181818 * 0.95 + 0.181818182 * 0.1 = 0.795454545
    assert float(bkt_step(0.5, 1, params)) == pytest.approx(0.7954545454545454)


@given(k=st.floats(0, 1), o=st.sampled_from([0, 1]), p=st.tuples(*[st.floats(0.001, 0.999)] * 4))
def test_step_stays_a_probability(k: float, o: int, p: tuple[float, float, float, float]) -> None:
    params = BKTParams(p[0], p[1], min(p[2], 0.5), min(p[3], 0.5))
    out = float(bkt_step(k, o, params))
    assert 0.0 <= out <= 1.0


def test_params_validation_and_round_trip() -> None:
    with pytest.raises(ValueError, match="learn=1.5"):
        BKTParams(0.1, 1.5, 0.1, 0.1)
    assert BKTParams.from_dict(PARAMS.to_dict()) == PARAMS


def test_sequences_from_events_groups_and_maps_back() -> None:
    skill = [1, 0, 1, 0, 0]
    student = [0, 0, 0, 1, 0]
    correct = [1, 0, 0, 1, 1.0]
    seqs = Sequences.from_events(skill, student, correct)
    assert seqs.lengths.tolist() == [2, 2, 1]
    assert seqs.skill.tolist() == [0, 1, 0]
    np.testing.assert_array_equal(seqs.obs[:, 0], [0, 1])  # skill 0, student 0: events 1 and 4
    np.testing.assert_array_equal(seqs.event_index[:, 0], [1, 4])
    assert seqs.n_active.tolist() == [3, 2]


def test_predict_sequences_matches_scalar_filter() -> None:
    data = generate_bkt(7, 2, 6, seed=3)
    seqs = data.sequences()
    params = np.array([[0.3, 0.2, 0.2, 0.1, 0.0], [0.5, 0.1, 0.25, 0.05, 0.0]])
    pred = predict_sequences(params, seqs)
    for sk in range(2):
        prm = BKTParams(*params[sk])
        for stu in range(7):
            sel = np.flatnonzero((data.skill == sk) & (data.student == stu))
            k = prm.prior
            for e in sel:
                assert pred[e] == pytest.approx(float(bkt_p_correct(k, prm)))
                k = float(bkt_step(k, data.correct[e], prm))


def test_em_recovers_one_skill_from_100k_interactions() -> None:
    truth = np.array([[0.35, 0.15, 0.22, 0.08, 0.0]])
    data = generate_bkt(5000, 1, 20, params=truth, seed=21)
    model = BKT(seed=1).fit(data.sequences())
    assert np.abs(model.params_[0, :4] - truth[0, :4]).max() <= 0.05
    assert model.converged_.all()


def test_em_recovers_ten_skills_from_100k_interactions() -> None:
    data = generate_bkt(500, 10, 20, seed=22)  # 100k interactions, 10k per skill
    model = BKT(seed=0).fit(data.sequences())
    err = np.abs(model.params_[:, :4] - data.true_params[:, :4])
    assert err.mean() <= 0.02
    assert np.mean(err <= 0.05) >= 0.95


def test_em_with_forgetting_recovers_forget() -> None:
    truth = np.array([[0.3, 0.2, 0.15, 0.1, 0.05]])
    data = generate_bkt(4000, 1, 25, params=truth, seed=23)
    model = BKT(seed=0, fit_forget=True).fit(data.sequences())
    assert np.abs(model.params_[0] - truth[0]).max() <= 0.05


def test_fitted_predictions_are_calibrated_on_held_out_students() -> None:
    data = generate_bkt(600, 10, 20, seed=24)
    train = data.student < 480
    model = BKT(seed=0).fit(data.sequences(train))
    test = ~train
    pred = np.empty(int(test.sum()))
    seqs = data.sequences(test)
    pred = model.predict_sequences(seqs)
    y = data.correct[test]
    assert expected_calibration_error(y, pred) <= 0.03
    assert auc(y, pred) >= 0.7


def test_guess_and_slip_respect_bounds() -> None:
    truth = np.array([[0.3, 0.2, 0.45, 0.4, 0.0]])  # outside bounds of 0.3, inside the default 0.5
    data = generate_bkt(1000, 1, 10, params=truth, seed=25)
    model = BKT(seed=0, max_guess=0.3, max_slip=0.3).fit(data.sequences())
    assert model.params_[0, 2] <= 0.3 and model.params_[0, 3] <= 0.3
    free = BKT(seed=0).fit(data.sequences())
    assert 0.3 < free.params_[0, 2] <= 0.5 and 0.3 < free.params_[0, 3] <= 0.5


def test_fit_is_deterministic_and_does_not_mutate() -> None:
    data = generate_bkt(200, 3, 10, seed=26)
    seqs = data.sequences()
    obs = seqs.obs.copy()
    one = BKT(seed=4).fit(seqs).params_
    two = BKT(seed=4).fit(seqs).params_
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(obs, seqs.obs)


def test_full_restarts_reach_at_least_the_same_likelihood() -> None:
    data = generate_bkt(300, 4, 15, seed=27)
    seqs = data.sequences()
    pruned = BKT(seed=0).fit(seqs)
    full = BKT(seed=0, select_after=None).fit(seqs)
    assert np.all(full.log_likelihood_ >= pruned.log_likelihood_ - 1.0)


def test_bkt_rejects_bad_hyperparameters() -> None:
    with pytest.raises(ValueError, match="n_restarts") as err:
        BKT(n_restarts=0, max_guess=1.5)
    assert "max_guess" in str(err.value)


def test_memory_grows_with_the_answers_not_with_the_longest_sequence_times_the_sequences() -> None:
    import tracemalloc

    rng = np.random.default_rng(0)
    # one learner with 5,000 answers on skill 0, and 20,000 learners with one answer each
    skill = np.r_[np.zeros(5000, dtype=int), rng.integers(0, 3, 20_000)]
    student = np.r_[np.zeros(5000, dtype=int), np.arange(1, 20_001)]
    correct = rng.random(skill.size) < 0.6
    tracemalloc.start()
    seqs = Sequences.from_events(skill, student, correct, n_skills=3)
    model = BKT(n_restarts=2, max_iter=5, seed=0).fit(seqs)
    pred = predict_sequences(model.params_, seqs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seqs.flat_obs.size == seqs.flat_index.size == skill.size
    # a padded (5,000 x 20,001) layout alone would take 800 MB; the flat one a few MB
    assert peak < 60 * 2**20, peak
    assert np.all(np.isfinite(pred)) and pred.size == skill.size


def test_student_ids_need_not_be_dense() -> None:
    sparse = Sequences.from_events([0, 1, 0], [10**12, 10**12, 5], [1, 0, 1])
    dense = Sequences.from_events([0, 1, 0], [1, 1, 0], [1, 0, 1])
    assert sparse.lengths.tolist() == dense.lengths.tolist() and sparse.skill.tolist() == dense.skill.tolist()
    assert sparse.student.tolist() == [5, 10**12, 10**12]
