"""BKT: golden step, filtering, EM recovery, calibration."""

from __future__ import annotations

import math

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
    truth = np.array([[0.3, 0.2, 0.45, 0.4, 0.0]])  # outside bounds of 0.3, inside 0.5
    data = generate_bkt(1000, 1, 10, params=truth, seed=25)
    model = BKT(seed=0, max_guess=0.3, max_slip=0.3).fit(data.sequences())
    assert model.params_[0, 2] <= 0.3 and model.params_[0, 3] <= 0.3
    half = BKT(seed=0, max_guess=0.5, max_slip=0.5).fit(data.sequences())
    assert 0.3 < half.params_[0, 2] <= 0.5 and 0.3 < half.params_[0, 3] <= 0.5
    assert BKT().max_guess == BKT().max_slip == 1.0  # no bound by default


def test_unbounded_fit_recovers_a_guess_above_one_half() -> None:
    truth = np.array([[0.4, 0.2, 0.6, 0.1, 0.0]])
    data = generate_bkt(4000, 1, 20, params=truth, seed=28)
    model = BKT(seed=0).fit(data.sequences())
    assert np.abs(model.params_[0, :4] - truth[0, :4]).max() <= 0.05


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


def _sequential(params: np.ndarray, skill: np.ndarray, student: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """P(correct) of every event by a plain loop over each learner's answers, one at a time."""
    out = np.empty(skill.size)
    belief: dict[tuple[int, int], float] = {}
    for e in range(skill.size):
        prm = BKTParams(*params[skill[e]])
        k = belief.get((skill[e], student[e]), prm.prior)
        out[e] = float(bkt_p_correct(k, prm))
        belief[(skill[e], student[e])] = float(bkt_step(k, correct[e], prm))
    return out


@pytest.mark.parametrize("forget", [0.0, 0.05])
def test_flat_scan_matches_a_sequential_loop_on_random_data(forget: float) -> None:
    rng = np.random.default_rng(5)
    # many learners with 1 to 40 answers, learners with a single answer, and one with 3,000 on skill 2
    lengths = np.r_[rng.integers(1, 40, 300), np.ones(50, dtype=int), 3000]
    student = np.repeat(np.arange(lengths.size), lengths)
    skill = np.where(student == lengths.size - 1, 2, rng.integers(0, 4, student.size))
    order = rng.permutation(student.size)  # interleave the learners in time
    skill, student = skill[order], student[order]
    correct = (rng.random(student.size) < 0.6).astype(float)
    params = np.c_[rng.uniform(0.05, 0.9, 4), rng.uniform(0.01, 0.4, 4), rng.uniform(0.01, 0.9, (4, 2)),
                   np.full(4, forget)]  # fmt: skip
    seqs = Sequences.from_events(skill, student, correct, n_skills=4)
    np.testing.assert_allclose(predict_sequences(params, seqs), _sequential(params, skill, student, correct),
                               rtol=0, atol=1e-10)  # fmt: skip


def test_fit_matches_a_sequential_em_step() -> None:
    """One EM iteration by the scan equals Baum-Welch done answer by answer."""
    rng = np.random.default_rng(8)
    lengths = np.r_[rng.integers(1, 30, 60), 1, 1, 500]
    obs = (rng.random(int(lengths.sum())) < 0.55).astype(float)
    start = np.array([0.4, 0.15, 0.2, 0.1, 0.0])
    model = BKT(n_restarts=1, max_iter=1, seed=0).fit(
        Sequences.from_events(np.zeros(obs.size, dtype=int), np.repeat(np.arange(lengths.size), lengths), obs)
    )
    prior, learn, guess, slip, _ = start
    a = np.array([[1.0, 0.0], [learn, 1.0 - learn]])  # states (K, U)
    counts = np.zeros(6)  # start K, sum K, sum K x answer, K with successor, U->K, U with successor
    at = 0
    for n in lengths:
        o = obs[at : at + n]
        at += n
        e = np.stack([np.where(o > 0.5, 1 - slip, slip), np.where(o > 0.5, guess, 1 - guess)], axis=1)
        alpha = np.zeros((n, 2))
        beta = np.ones((n, 2))
        alpha[0] = np.array([prior, 1 - prior]) * e[0]
        for t in range(1, n):
            alpha[t] = (alpha[t - 1] @ a) * e[t]
        for t in range(n - 2, -1, -1):
            beta[t] = a @ (e[t + 1] * beta[t + 1])
        lik = alpha[-1].sum()
        g = alpha[:, 0] * beta[:, 0] / lik
        xi_uk = sum(alpha[t, 1] * a[1, 0] * e[t + 1, 0] * beta[t + 1, 0] / lik for t in range(n - 1))
        counts += [g[0], g.sum(), (g * o).sum(), g[:-1].sum(), xi_uk, (1 - g[:-1]).sum()]
    expected = [
        counts[0] / lengths.size,  # prior
        counts[4] / counts[5],  # learn
        (obs.sum() - counts[2]) / (obs.size - counts[1]),  # guess
        (counts[1] - counts[2]) / counts[1],  # slip
    ]
    np.testing.assert_allclose(model.params_[0, :4], expected, rtol=1e-9)


def test_skill_ids_may_be_sparse_or_not_integers() -> None:
    data = generate_bkt(400, 3, 15, seed=29)
    names = np.array(["fractions", "algebra", "geometry"])[data.skill]
    index, labels = Sequences.encode(names)
    assert labels.tolist() == ["algebra", "fractions", "geometry"]
    seqs = Sequences.from_events(index, data.student, data.correct)
    dense = BKT(seed=0).fit(seqs).params_
    # the same skills as sparse indices among a million: only the three used ones are fitted
    sparse_idx = np.array([7, 123_456, 999_999])[index]
    sparse = BKT(seed=0).fit(Sequences.from_events(sparse_idx, data.student, data.correct, n_skills=10**6))
    np.testing.assert_allclose(sparse.params_[[7, 123_456, 999_999]], dense, atol=1e-12)
    assert sparse.params_.shape == (10**6, 5) and not np.isnan(sparse.params_).any()


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


def _random_layout(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merged sequences of 4 skills: 1 to 40 answers, single answers, and two long ones (3,000 and 700)."""
    from learnloop.tracing import _bkt_scan

    rng = np.random.default_rng(seed)
    lengths = np.r_[rng.integers(1, 40, 300), np.ones(50, dtype=int), 3000, 700]
    skill = rng.integers(0, 4, lengths.size)
    obs = (rng.random(int(lengths.sum())) < 0.6).astype(float)
    return _bkt_scan.merge_identical(obs, lengths, skill)


@pytest.mark.parametrize("size", [1 << 15, 64, 5])
def test_e_step_by_the_moment_of_learning_equals_the_scan(size: int) -> None:
    from learnloop.tracing import _bkt_onset
    from learnloop.tracing.bkt import _Layout

    obs, lengths, skill, weight = _random_layout(1)
    assert weight.max() > 1  # some sequences were merged
    rng = np.random.default_rng(2)
    r = 3
    prm = np.stack([rng.uniform(0.05, 0.9, (r, 4)), rng.uniform(0.01, 0.4, (r, 4)), rng.uniform(0.01, 0.9, (r, 4)),
                    rng.uniform(0.01, 0.9, (r, 4)), np.zeros((r, 4))])  # fmt: skip
    scan = _Layout(obs, lengths, skill, weight, 6).e_step(prm)
    onset = _bkt_onset.Layout(obs, lengths, skill, weight, size).e_step(prm)
    assert onset.shape == scan.shape == (7, r, 4)
    assert np.abs(scan[6]).min() > 100  # log-likelihoods of thousands of answers
    np.testing.assert_allclose(onset, scan, rtol=1e-10, atol=1e-10)
    kept = np.arange(lengths.size) % 3 > 0
    np.testing.assert_allclose(
        _bkt_onset.Layout(obs, lengths, skill, weight, size).keep(kept).e_step(prm),
        _Layout(obs, lengths, skill, weight, 6).keep(kept).e_step(prm),
        rtol=1e-10,
        atol=1e-10,
    )


def _matrix_forward(prm: np.ndarray, obs: np.ndarray) -> float:
    """Log-likelihood of one sequence by the forward algorithm on the two-state vector, rescaled each answer."""
    prior, learn, guess, slip = prm[:4]
    alpha = np.array([prior, 1.0 - prior])
    move = np.array([[1.0, 0.0], [learn, 1.0 - learn]])
    total = 0.0
    for o in obs:
        alpha = alpha * (np.array([1.0 - slip, guess]) if o > 0.5 else np.array([slip, 1.0 - guess]))
        total += float(np.log(alpha.sum()))
        alpha = alpha / alpha.sum() @ move
    return total


def test_e_step_log_likelihood_is_exact_at_extreme_parameters() -> None:
    """A slip at its bound of 1e-4 and long runs of right answers before a few wrong ones."""
    from learnloop.tracing import _bkt_onset

    rng = np.random.default_rng(3)
    seqs = [np.r_[np.ones(300), np.zeros(3), (rng.random(100) < 0.5)], np.r_[np.zeros(5), np.ones(400)], np.ones(1)]
    lengths = np.array([s.size for s in seqs])
    prm = np.array([0.9, 0.01, 0.6, 1e-4, 0.0])
    acc = _bkt_onset.Layout(np.concatenate(seqs), lengths, np.zeros(3, dtype=np.intp), np.ones(3)).e_step(
        prm[:, None, None]
    )
    expected = sum(_matrix_forward(prm, s) for s in seqs)
    assert acc[6, 0, 0] == pytest.approx(expected, rel=1e-12)


def test_single_answers_leave_learn_where_it_started() -> None:
    # skill 1 is only ever answered once per learner: there is no transition to learn from
    seqs = Sequences.from_events([0, 0, 0, 1, 1, 1, 0], [0, 0, 1, 0, 1, 2, 1], [0, 1, 1, 1, 0, 1, 1])
    model = BKT(n_restarts=1, seed=0).fit(seqs)
    assert model.params_[1, 1] == 0.15  # the starting point's learn, untouched
    assert model.params_[0, 1] != 0.15


def test_a_belief_kept_as_log_odds_follows_the_exact_filter_over_a_long_history() -> None:
    from decimal import Decimal, getcontext

    from learnloop.tracing import BKTParams, bkt_p_correct, bkt_step

    getcontext().prec = 80
    params = BKTParams(prior=0.3, learn=0.15, guess=0.2, slip=1e-4)
    answers = [1] * 40 + [0] * 8 + [1, 0] * 10 + [1] * 200 + [0] * 3
    # the exact forward filter, in 80-digit decimals
    prior, learn, guess, slip = (Decimal(repr(v)) for v in (params.prior, params.learn, params.guess, params.slip))
    k, exact = prior, []
    for o in answers:
        exact.append(float(k * (1 - slip) + (1 - k) * guess))
        lik_k, lik_u = (1 - slip, guess) if o else (slip, 1 - guess)
        post = k * lik_k / (k * lik_k + (1 - k) * lik_u)
        k = post + (1 - post) * learn
    z, as_logit = math.log(0.3 / 0.7), []
    p, as_probability = 0.3, []
    for o in answers:
        as_logit.append(float(bkt_p_correct(z, params, logit=True)))
        as_probability.append(float(bkt_p_correct(p, params)))
        z = float(bkt_step(z, o, params, logit=True))
        p = float(bkt_step(p, o, params))
    np.testing.assert_allclose(as_logit, exact, rtol=1e-9, atol=1e-12)
    # held as a probability, the belief saturated at 1 and missed the recovery after the wrong answers
    assert max(abs(a - b) for a, b in zip(as_probability, exact)) > 0.5


def test_params_by_name_per_fitted_skill() -> None:
    data = generate_bkt(n_students=200, n_skills=3, seq_len=10, seed=3)
    idx, labels = Sequences.encode(np.asarray(["frac", "add", "mul"])[data.skill])
    seqs = Sequences.from_events(idx, data.student, data.correct, n_skills=4)  # index 3: no answers
    model = BKT(n_restarts=2, seed=0).fit(seqs)
    by_index = model.params()
    assert list(by_index) == [0, 1, 2] and model.fitted_.tolist() == [True, True, True, False]
    for k, values in by_index.items():
        assert list(values) == ["prior", "learn", "guess", "slip", "forget"]
        assert list(values.values()) == model.params_[k].tolist()  # the array's row, by name
    named = model.params([*labels.tolist(), "unused"])
    assert list(named) == ["add", "frac", "mul"] and named["mul"] == by_index[2]
    assert named["add"]["learn"] == model.params_for(0).learn
    with pytest.raises(ValueError, match="2 skill ids given for 4 skills"):
        model.params(["a", "b"])
    with pytest.raises(ValueError, match="fit the model first"):
        BKT().params()
