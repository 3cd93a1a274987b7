"""The sequence model in PyTorch, for training only (the ``fit`` extra); the package runs it in numpy
(``learnloop.voice.sequence.SequenceModel``), from the weights :func:`export` gives.

The network mirrors the numpy one exactly: standardised phone features through a linear
layer plus sinusoidal position codes, ``layers`` pre-norm encoder layers (multi-head
attention with a learned bonus per head for phones of the same word, a GELU feed-forward
layer), a final layer norm, and three heads (phone: linear; word: the mean of its phones
through a tanh layer; utterance: the mean of all phones and the standardised timing
through a tanh layer). The word and utterance heads learn the experts' scales divided by
5 (all three on 0-2, as GOPT does); :func:`export` multiplies their last layer by 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from learnloop.voice.sequence import SequenceModel, positions


@dataclass
class Utterance:
    x: np.ndarray  # (P, F) phone features
    word: np.ndarray  # (P,) word of each phone
    n_words: int
    timing: np.ndarray  # (T,)
    phone_y: np.ndarray  # (P,) nan: no label
    word_y: np.ndarray  # (n_words,) nan: no label (0-10)
    total_y: float  # nan: no label (0-10)
    weight: float = 1.0  # of its phones in the phone loss (the substitution renditions: the chosen weight)


class Layer(nn.Module):
    def __init__(self, width: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.same = nn.Parameter(torch.zeros(heads))
        self.out = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.ff1 = nn.Linear(width, ff)
        self.ff2 = nn.Linear(ff, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, h: torch.Tensor, same: torch.Tensor, key_ok: torch.Tensor) -> torch.Tensor:
        b, n, w = h.shape
        dh = w // self.heads
        q, k, v = self.qkv(self.ln1(h)).split(w, dim=-1)
        q = q.view(b, n, self.heads, dh).transpose(1, 2)
        k = k.view(b, n, self.heads, dh).transpose(1, 2)
        v = v.view(b, n, self.heads, dh).transpose(1, 2)
        logits = q @ k.transpose(-1, -2) / math.sqrt(dh) + self.same[None, :, None, None] * same[:, None]
        logits = logits.masked_fill(~key_ok[:, None, None, :], -1e9)
        att = torch.softmax(logits, dim=-1)
        a = (att @ v).transpose(1, 2).reshape(b, n, w)
        h = h + self.drop(self.out(a))
        return h + self.drop(self.ff2(nn.functional.gelu(self.ff1(self.ln2(h)), approximate="tanh")))


class Net(nn.Module):
    def __init__(
        self,
        mean: np.ndarray,
        sd: np.ndarray,
        t_mean: np.ndarray,
        t_sd: np.ndarray,
        *,
        width: int,
        heads: int,
        layers: int,
        ff: int,
        dropout: float,
    ) -> None:
        super().__init__()
        self.width, self.heads, self.n_layers = width, heads, layers
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))
        self.register_buffer("sd", torch.tensor(sd, dtype=torch.float32))
        self.register_buffer("t_mean", torch.tensor(t_mean, dtype=torch.float32))
        self.register_buffer("t_sd", torch.tensor(t_sd, dtype=torch.float32))
        self.register_buffer("pos", torch.tensor(positions(512, width), dtype=torch.float32))
        self.inp = nn.Linear(len(mean), width)
        self.layers = nn.ModuleList([Layer(width, heads, ff, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.phone = nn.Linear(width, 1)
        self.word1 = nn.Linear(width, width)
        self.word2 = nn.Linear(width, 1)
        self.utt1 = nn.Linear(width + len(t_mean), width)
        self.utt2 = nn.Linear(width, 1)
        self.drop = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, ok: torch.Tensor, word: torch.Tensor, n_words: int, timing: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n = x.shape[1]
        h = self.inp((x - self.mean) / self.sd) + self.pos[:n]
        h = self.drop(h)
        same = ((word[:, :, None] == word[:, None, :]) & ok[:, :, None] & ok[:, None, :]).float()
        for layer in self.layers:
            h = layer(h, same, ok)
        h = self.ln(h)
        phone = self.phone(h)[..., 0]
        member = (word[:, None, :] == torch.arange(n_words)[None, :, None]) & ok[:, None, :]  # (B, W, N)
        m = member.float()
        pooled = (m @ h) / m.sum(-1, keepdim=True).clamp(min=1.0)
        words = self.word2(torch.tanh(self.word1(pooled)))[..., 0]
        mean = (h * ok[..., None]).sum(1) / ok.sum(1, keepdim=True).clamp(min=1)
        t = (timing - self.t_mean) / self.t_sd
        total = self.utt2(torch.tanh(self.utt1(torch.cat([mean, t], dim=-1))))[..., 0]
        return phone, words, total


def batch(utts: list[Utterance]) -> dict[str, torch.Tensor | int]:
    n = max(len(u.x) for u in utts)
    w = max(u.n_words for u in utts)
    f = utts[0].x.shape[1]
    x = np.zeros((len(utts), n, f), dtype=np.float32)
    ok = np.zeros((len(utts), n), dtype=bool)
    word = np.full((len(utts), n), -1, dtype=np.int64)
    py = np.full((len(utts), n), np.nan, dtype=np.float32)
    wy = np.full((len(utts), w), np.nan, dtype=np.float32)
    ty = np.array([u.total_y for u in utts], dtype=np.float32)
    pw = np.zeros((len(utts), n), dtype=np.float32)
    timing = np.stack([u.timing for u in utts]).astype(np.float32)
    for i, u in enumerate(utts):
        p = len(u.x)
        x[i, :p], ok[i, :p], word[i, :p], py[i, :p], pw[i, :p] = u.x, True, u.word, u.phone_y, u.weight
        wy[i, : u.n_words] = u.word_y
    return {
        "x": torch.from_numpy(x),
        "ok": torch.from_numpy(ok),
        "word": torch.from_numpy(word),
        "n_words": w,
        "timing": torch.from_numpy(timing),
        "py": torch.from_numpy(py),
        "wy": torch.from_numpy(wy),
        "ty": torch.from_numpy(ty),
        "pw": torch.from_numpy(pw),
    }


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sd = x.std(0)
    return x.mean(0), np.where(sd > 1e-6, sd, 1.0)


def train(
    utts: list[Utterance],
    *,
    width: int = 32,
    heads: int = 2,
    layers: int = 2,
    ff: int = 64,
    dropout: float = 0.1,
    epochs: int = 40,
    lr: float = 2e-3,
    weight_decay: float = 1e-4,
    batch_size: int = 64,
    seed: int = 0,
    progress: str = "",
) -> Net:
    """Fit on ``utts`` (Adam, the learning rate decayed linearly to a tenth; a mean squared
    error per level, each on the 0-2 scale, summed; the phones' weighted by their utterance's
    ``weight``)."""
    from tqdm.auto import tqdm

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    mean, sd = _standardise(np.concatenate([u.x for u in utts]))
    t_mean, t_sd = _standardise(np.stack([u.timing for u in utts]))
    net = Net(mean, sd, t_mean, t_sd, width=width, heads=heads, layers=layers, ff=ff, dropout=dropout)
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * math.ceil(len(utts) / batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - 0.9 * s / steps)
    # batches of similar length: sort by length within random chunks
    bar = tqdm(range(epochs), desc=progress or "sequence model", leave=False, mininterval=5)
    for _ in bar:
        net.train()
        order = rng.permutation(len(utts))
        chunks = [order[i : i + batch_size * 8] for i in range(0, len(order), batch_size * 8)]
        batches = []
        for c in chunks:
            c = sorted(c, key=lambda j: len(utts[j].x))
            batches += [c[i : i + batch_size] for i in range(0, len(c), batch_size)]
        rng.shuffle(batches)  # type: ignore[arg-type]
        total_loss = 0.0
        for idx in batches:
            b = batch([utts[j] for j in idx])
            phone, words, total = net(b["x"], b["ok"], b["word"], b["n_words"], b["timing"])  # type: ignore[arg-type]
            # phones: the mean squared error weighted by each utterance's weight (1 for the corpus)
            have = ~torch.isnan(b["py"])  # type: ignore[arg-type]
            pw = b["pw"][have]  # type: ignore[index]
            loss = (pw * (phone[have] - b["py"][have]) ** 2).sum() / pw.sum().clamp(min=1e-6)  # type: ignore[index]
            for pred, target in ((words, b["wy"] / 5.0), (total, b["ty"] / 5.0)):  # type: ignore[operator]
                have = ~torch.isnan(target)  # type: ignore[arg-type]
                if have.any():
                    loss = loss + ((pred[have] - target[have]) ** 2).mean()  # type: ignore[index]
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            opt.step()
            sched.step()
            total_loss += float(loss.detach())
        bar.set_postfix(loss=total_loss / len(batches))
    net.eval()
    return net


@torch.no_grad()
def predict(net: Net, utts: list[Utterance], batch_size: int = 64) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(phone accuracies, word accuracies 0-10, total 0-10) of each utterance, unclipped."""
    net.eval()
    out = []
    order = sorted(range(len(utts)), key=lambda j: len(utts[j].x))
    found: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        b = batch([utts[j] for j in idx])
        phone, words, total = net(b["x"], b["ok"], b["word"], b["n_words"], b["timing"])  # type: ignore[arg-type]
        for r, j in enumerate(idx):
            u = utts[j]
            found[j] = (
                phone[r, : len(u.x)].numpy().astype(np.float64),
                5.0 * words[r, : u.n_words].numpy().astype(np.float64),
                5.0 * float(total[r]),
            )
    for j in range(len(utts)):
        out.append(found[j])
    return out


def export(nets: list[Net]) -> SequenceModel:
    """The numpy model averaging ``nets`` (float32 weights, as saved and loaded)."""
    members = tuple(_weights(net) for net in nets)
    model = SequenceModel(members, nets[0].n_layers, nets[0].heads, nets[0].width)
    return SequenceModel.load(model.to_bytes(), model.sha256())


def _weights(net: Net) -> dict[str, np.ndarray]:
    s = {k: v.detach().numpy().astype(np.float64) for k, v in net.state_dict().items()}
    w: dict[str, np.ndarray] = {
        "in.mean": s["mean"],
        "in.sd": s["sd"],
        "in.w": s["inp.weight"].T,
        "in.b": s["inp.bias"],
        "ln.g": s["ln.weight"],
        "ln.b": s["ln.bias"],
        "phone.w": s["phone.weight"].T,
        "phone.b": s["phone.bias"],
        "word1.w": s["word1.weight"].T,
        "word1.b": s["word1.bias"],
        "word2.w": 5.0 * s["word2.weight"].T,
        "word2.b": 5.0 * s["word2.bias"],
        "utt1.w": s["utt1.weight"].T,
        "utt1.b": s["utt1.bias"],
        "utt2.w": 5.0 * s["utt2.weight"].T,
        "utt2.b": 5.0 * s["utt2.bias"],
        "timing.mean": s["t_mean"],
        "timing.sd": s["t_sd"],
    }
    for k in range(net.n_layers):
        p = f"layers.{k}."
        q = f"layer{k}."
        w[q + "ln1.g"], w[q + "ln1.b"] = s[p + "ln1.weight"], s[p + "ln1.bias"]
        w[q + "ln2.g"], w[q + "ln2.b"] = s[p + "ln2.weight"], s[p + "ln2.bias"]
        w[q + "qkv.w"], w[q + "qkv.b"] = s[p + "qkv.weight"].T, s[p + "qkv.bias"]
        w[q + "same"] = s[p + "same"]
        w[q + "out.w"], w[q + "out.b"] = s[p + "out.weight"].T, s[p + "out.bias"]
        w[q + "ff1.w"], w[q + "ff1.b"] = s[p + "ff1.weight"].T, s[p + "ff1.bias"]
        w[q + "ff2.w"], w[q + "ff2.b"] = s[p + "ff2.weight"].T, s[p + "ff2.bias"]
    return {k: np.ascontiguousarray(v) for k, v in w.items()}


# -- fitting on folds ------------------------------------------------------------------------------
Config = tuple[int, int, int, int, float, int]  # width, heads, layers, feed-forward, dropout, epochs
Prediction = tuple[np.ndarray, np.ndarray, float]


def as_utterance(ev: object, phone_y: np.ndarray, word_y: np.ndarray | None, total_y: float) -> Utterance:
    """The sequence model's view of one utterance and its labels (``word_y`` None: no word label)."""
    from learnloop.voice.assessment import sequence_features, utterance_timing

    n_words = len(ev.pronunciations)  # type: ignore[attr-defined]
    return Utterance(
        sequence_features(ev),  # type: ignore[arg-type]
        np.array([g.word for g in ev.gops], dtype=np.int64),  # type: ignore[attr-defined]
        n_words,
        utterance_timing(ev),  # type: ignore[arg-type]
        np.asarray(phone_y, dtype=np.float64),
        np.full(n_words, np.nan) if word_y is None else np.asarray(word_y, dtype=np.float64),
        total_y,
    )


def ensemble(utts: list[Utterance], config: Config, progress: str, seeds: int = 1) -> list[Net]:
    """``seeds`` networks of ``config`` trained on ``utts`` (seeds 0, 1, ...)."""
    width, heads, layers, ff, dropout, epochs = config
    return [
        train(
            utts, width=width, heads=heads, layers=layers, ff=ff, dropout=dropout, epochs=epochs, seed=s,
            progress=f"{progress} seed {s}",
        )
        for s in range(seeds)
    ]  # fmt: skip


def predict_mean(nets: list[Net], utts: list[Utterance]) -> list[Prediction]:
    """The mean of ``nets``' predictions of each utterance."""
    runs = [predict(n, utts) for n in nets]
    return [
        (
            np.mean([r[j][0] for r in runs], 0),
            np.mean([r[j][1] for r in runs], 0),
            float(np.mean([r[j][2] for r in runs])),
        )
        for j in range(len(utts))
    ]


def out_of_fold(
    utts: list[Utterance],
    trainable: np.ndarray,
    fold: np.ndarray,
    config: Config,
    log: str = "",
    cache_dir: Path | None = None,
) -> list[Prediction]:
    """Each utterance predicted by a network trained on the ``trainable`` utterances of the other folds.

    With ``cache_dir``, the predictions are kept there, keyed by a hash of the inputs, the labels,
    the folds, the config and this file, and read back when all of them are the same."""
    import hashlib
    import pickle
    import time

    key = hashlib.sha256(Path(__file__).read_bytes())
    for u in utts:
        for a in (u.x, u.word, u.timing, u.phone_y, u.word_y, np.array([u.total_y, u.weight])):
            key.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    key.update(np.asarray(trainable, dtype=np.int8).tobytes() + np.asarray(fold, dtype=np.int64).tobytes())
    key.update(repr(config).encode())
    path = None if cache_dir is None else cache_dir / f"sequence-oof-{key.hexdigest()[:16]}.pkl"
    if path is not None and path.exists():
        print(f"    {log}fold predictions read from {path}")
        return pickle.loads(path.read_bytes())  # type: ignore[no-any-return]
    out: list[Prediction | None] = [None] * len(utts)
    t0 = time.perf_counter()
    for k in np.unique(fold):
        nets = ensemble([u for u, t, f in zip(utts, trainable, fold, strict=True) if t and f != k], config, f"fold {k}")
        idx = [j for j in range(len(utts)) if fold[j] == k]
        for j, found in zip(idx, predict_mean(nets, [utts[j] for j in idx]), strict=True):
            out[j] = found
        print(f"    {log}fold {k} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    found = [o for o in out if o is not None]
    if path is not None:
        path.write_bytes(pickle.dumps(found))
    return found


def final_model(utts: list[Utterance], config: Config, seeds: int, cache_dir: Path | None = None) -> SequenceModel:
    """The numpy model averaging ``seeds`` networks trained on all of ``utts`` (kept in ``cache_dir``
    like :func:`out_of_fold`'s predictions)."""
    import hashlib

    key = hashlib.sha256(Path(__file__).read_bytes())
    for u in utts:
        for a in (u.x, u.word, u.timing, u.phone_y, u.word_y, np.array([u.total_y, u.weight])):
            key.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    key.update(repr((config, seeds)).encode())
    path = None if cache_dir is None else cache_dir / f"sequence-final-{key.hexdigest()[:16]}.npz"
    if path is not None and path.exists():
        data = path.read_bytes()
        return SequenceModel.load(data, hashlib.sha256(data).hexdigest())
    model = export(ensemble(utts, config, "final", seeds))
    if path is not None:
        path.write_bytes(model.to_bytes())
    return model
