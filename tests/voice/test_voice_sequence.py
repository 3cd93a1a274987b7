"""The sequence model: shipped as a weights file checked by its hash, run in numpy, read in context,
and equal to the PyTorch network it was trained as (when PyTorch is installed: it is a training
dependency only)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from conftest import OTHER, PHRASE

from learnloop.voice import PronunciationScorer
from learnloop.voice.assessment import Assessor, default_assessor, sequence_features, utterance_timing
from learnloop.voice.sequence import SequenceModel

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "fit"


def shipped() -> SequenceModel:
    model = default_assessor().sequence
    assert model is not None
    return model


def test_the_shipped_model_is_a_small_sequence_model_whose_file_matches_its_hash() -> None:
    data = resources.files("learnloop.voice").joinpath("assessment.npz").read_bytes()
    assert len(data) < 3_000_000
    model = shipped()
    assert model.sha256() == default_assessor().to_dict()["sequence"]["sha256"]
    again = SequenceModel.load(data, model.sha256())
    assert again.layers == model.layers and len(again.members) == len(model.members)
    n_weights = sum(v.size for v in model.members[0].values())
    assert 5_000 < n_weights < 150_000


def test_a_weights_file_that_does_not_match_its_hash_is_refused() -> None:
    data = bytearray(shipped().to_bytes())
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(ValueError, match="hash"):
        SequenceModel.load(bytes(data), shipped().sha256())


def test_a_saved_model_loads_from_beside_its_json_and_judges_alike(
    tmp_path: Path, scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    path = tmp_path / "mine.json"
    default_assessor().save(path)
    assert (tmp_path / "mine.npz").exists()
    loaded = Assessor.load(path)
    ev = scorer.evidence(clips["phrase"], PHRASE)
    a, b = default_assessor().judge(ev), loaded.judge(ev)
    assert np.array_equal(a.phone_scores, b.phone_scores) and a.overall_score == b.overall_score
    (tmp_path / "mine.npz").write_bytes(b"not the weights")
    with pytest.raises(ValueError, match="hash"):
        Assessor.load(path)


def shifted(model: SequenceModel, by: float) -> SequenceModel:
    """``model`` with every member's phone read-out moved by ``by`` (words and total untouched)."""
    members = tuple({**m, "phone.b": m["phone.b"] + by} for m in model.members)
    return SequenceModel(members, model.layers, model.heads, model.width)


def test_a_second_sequence_model_gives_the_phones_and_the_first_the_words_and_total(
    scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    ev = scorer.evidence(clips["phrase"], PHRASE)
    base = default_assessor()
    assert base.blend > 0.0
    plain = dataclasses.replace(base, phone_sequence=None)
    two = dataclasses.replace(base, phone_sequence=shifted(shipped(), -0.4))
    p0, w0, t0 = plain.sequence_predictions(ev)
    p1, w1, t1 = two.sequence_predictions(ev)
    np.testing.assert_allclose(p1, p0 - 0.4, atol=1e-9)
    assert np.array_equal(w1, w0) and t1 == t0
    a, b = plain.judge(ev), two.judge(ev)
    # the blended phones follow the phones' model; the word stage sees those phones, so words may move
    assert np.all(b.phone_accuracy <= a.phone_accuracy) and np.any(b.phone_accuracy < a.phone_accuracy)
    with pytest.raises(ValueError, match="needs the sequence model"):
        dataclasses.replace(base, sequence=None, phone_sequence=shipped())


def test_a_model_with_two_sequence_models_round_trips_and_checks_both_files(
    tmp_path: Path, scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    phones = shifted(shipped(), -0.3)
    two = dataclasses.replace(default_assessor(), phone_sequence=phones)
    path = tmp_path / "two.json"
    two.save(path)
    assert (tmp_path / "two.npz").exists() and (tmp_path / "two-phones.npz").exists()
    loaded = Assessor.load(path)
    assert loaded.phone_sequence is not None and loaded.phone_sequence.sha256() == phones.sha256()
    ev = scorer.evidence(clips["phrase"], PHRASE)
    a, b = two.judge(ev), loaded.judge(ev)
    np.testing.assert_allclose(a.phone_accuracy, b.phone_accuracy, atol=1e-6)
    assert np.array_equal(a.phone_scores, b.phone_scores) and a.overall_score == b.overall_score
    # a model file without the phones' model (as written before there was one) loads, with one sequence model
    older = json.loads(path.read_text())
    del older["sequence"]["phones"]
    one = Assessor.from_dict(older, where=tmp_path)
    assert one.phone_sequence is None and one.sequence is not None
    # the phones' weights are checked against their own recorded hash
    (tmp_path / "two-phones.npz").write_bytes((tmp_path / "two.npz").read_bytes())
    with pytest.raises(ValueError, match="hash"):
        Assessor.load(path)


def test_a_phone_is_judged_in_the_context_of_its_utterance(
    scorer: PronunciationScorer, clips: dict[str, bytes]
) -> None:
    ev = scorer.evidence(clips["phrase"], PHRASE)
    model = shipped()
    x = sequence_features(ev)
    word = np.array([g.word for g in ev.gops])
    timing = utterance_timing(ev)
    phone, words, total = model(x, word, timing, len(ev.pronunciations))
    assert phone.shape == (len(ev.gops),) and words.shape == (4,) and np.isfinite(total)
    # the same first word alone: its phones' own rows, scored without the rest of the utterance
    first = word == 0
    alone, _, _ = model(x[first], word[first], timing, 1)
    assert not np.allclose(alone, phone[first])
    # a word without aligned phones gets no word prediction
    _, some, _ = model(x[~first], word[~first], timing, 4)
    assert some[0] == 0.0


def test_the_sequence_model_and_the_speech_check_work_together(scorer: PronunciationScorer) -> None:
    silent = np.zeros(16000)
    result = scorer.score(silent, PHRASE)
    assert result.overall_score == 0 and not any(w.is_matched for w in result.word_scores)
    gated = dataclasses.replace(default_assessor(), speech_gate=False)
    assert gated.sequence is default_assessor().sequence


def test_the_numpy_forward_pass_equals_the_torch_network(scorer: PronunciationScorer, clips: dict[str, bytes]) -> None:
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    sys.path.insert(0, str(TOOLS))
    try:
        import _sequence_torch as seq
    finally:
        sys.path.remove(str(TOOLS))
    evs = [scorer.evidence(clips["phrase"], PHRASE), scorer.evidence(clips["other"], OTHER)]
    utts = [seq.as_utterance(ev, np.full(len(ev.gops), 2.0), None, float("nan")) for ev in evs]
    rng = np.random.default_rng(3)
    for u in utts:  # away from the clip's own values, so that every part of the network matters
        u.x = u.x + rng.normal(0.0, 0.5, u.x.shape)
    torch.manual_seed(0)
    nets = []
    for seed in (0, 1):
        net = seq.Net(
            *seq._standardise(np.concatenate([u.x for u in utts])),
            *seq._standardise(np.stack([u.timing for u in utts]) + rng.normal(0, 1, (2, len(utts[0].timing)))),
            width=16, heads=2, layers=2, ff=32, dropout=0.0,
        )  # fmt: skip
        torch.manual_seed(seed)
        with torch.no_grad():
            for p in net.parameters():  # random weights everywhere (LayerNorm and biases included)
                p.add_(0.3 * torch.randn_like(p))
        nets.append(net.eval())
    expected = seq.predict_mean(nets, utts)
    model = seq.export(nets)  # float32 weights, as shipped
    for u, (phone, words, total) in zip(utts, expected, strict=True):
        got = model(u.x, u.word, u.timing, u.n_words)
        np.testing.assert_allclose(got[0], phone, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got[1], words, atol=1e-5, rtol=0)
        assert abs(got[2] - total) < 1e-5
        assert np.std(got[0]) > 1e-3  # the phones differ: the comparison is not of constants


def test_scoring_runs_in_numpy_without_the_training_dependencies() -> None:
    code = (
        "import sys, numpy as np; from learnloop.voice import PronunciationScorer; "
        "from learnloop.voice.synthesis import synthesize; "
        "r = PronunciationScorer().score(synthesize('hello world'), 'hello world'); "
        "print(r.overall_score > 0, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True False"
