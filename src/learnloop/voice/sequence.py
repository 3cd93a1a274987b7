"""The sequence model: every phone of the utterance read together, phone, word and utterance scores out.

A small transformer encoder over the utterance's phones (after GOPT, Gong et al.
2022, which learns over the GOP features of a whole utterance): each phone
enters as its evidence (:func:`~learnloop.voice.assessment.sequence_features`: the calibrated and raw GOP, its
ratios against every phone, duration, own fit, its place in the word and in the
utterance, the pauses around its word, its identity), every phone attends to
every other with a learned bonus for phones of its own word, and three heads read
the result:

- *phone*: a linear read-out per phone, the experts' phone accuracy (0-2);
- *word*: the mean of the word's phones, through a small tanh layer, the word
  accuracy (0-10) the word has if it was said;
- *utterance*: the mean of all phones with the utterance's timing
  (:func:`~learnloop.voice.assessment.utterance_timing`), the total (0-10).

It is trained offline (``tools/fit/fit_voice_real.py`` with ``tools/fit/_sequence_torch.py``,
PyTorch, the ``voice-train`` extra, on the speechocean762 train split) and run here in
numpy from ``assessment.npz``, whose SHA-256 ``assessment.json`` records; loading refuses
a file that does not match.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass

import numpy as np

__all__ = ["SequenceModel", "positions"]


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    out: np.ndarray = (x - mu) / np.sqrt(var + 1e-5) * g + b
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def positions(n: int, d: int) -> np.ndarray:
    """Sinusoidal position codes ``(n, d)`` of the phones' order."""
    pos = np.arange(n)[:, None]
    rate = np.exp(-np.log(10000.0) * (np.arange(0, d, 2) / d))[None, :]
    out = np.zeros((n, d))
    out[:, 0::2] = np.sin(pos * rate)
    out[:, 1::2] = np.cos(pos * rate)
    return out


@dataclass(frozen=True, eq=False)
class SequenceModel:
    """The weights of one or more networks of the same shape (``layers`` encoder layers of width
    ``width`` with ``heads`` attention heads; names as the fitter writes them), whose outputs
    are averaged."""

    members: tuple[dict[str, np.ndarray], ...]
    layers: int
    heads: int
    width: int

    def __call__(
        self, x: np.ndarray, word: np.ndarray, timing: np.ndarray, n_words: int
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Phone accuracies ``(P,)``, word accuracies ``(n_words,)`` (``word`` numbers each phone's
        word; a word without phones gets 0) and the total, from ``x`` ``(P, F)`` and the
        utterance's timing ``(T,)``: the mean of the members' outputs."""
        if len(x) == 0:
            return np.zeros(0), np.zeros(n_words), 0.0
        runs = [self._one(w, x, word, timing, n_words) for w in self.members]
        return (
            np.mean([r[0] for r in runs], axis=0),
            np.mean([r[1] for r in runs], axis=0),
            float(np.mean([r[2] for r in runs])),
        )

    def _one(
        self, w: dict[str, np.ndarray], x: np.ndarray, word: np.ndarray, timing: np.ndarray, n_words: int
    ) -> tuple[np.ndarray, np.ndarray, float]:
        n = len(x)
        h = ((x - w["in.mean"]) / w["in.sd"]) @ w["in.w"] + w["in.b"] + positions(n, self.width)
        same = (word[:, None] == word[None, :]).astype(np.float64)
        dh = self.width // self.heads
        for k in range(self.layers):
            p = f"layer{k}."
            a = _layer_norm(h, w[p + "ln1.g"], w[p + "ln1.b"])
            q, kk, v = np.split(a @ w[p + "qkv.w"] + w[p + "qkv.b"], 3, axis=1)
            heads = []
            for j in range(self.heads):
                cols = slice(j * dh, (j + 1) * dh)
                logits = q[:, cols] @ kk[:, cols].T / np.sqrt(dh) + w[p + "same"][j] * same
                logits -= logits.max(axis=1, keepdims=True)
                att = np.exp(logits)
                att /= att.sum(axis=1, keepdims=True)
                heads.append(att @ v[:, cols])
            h = h + np.concatenate(heads, axis=1) @ w[p + "out.w"] + w[p + "out.b"]
            a = _layer_norm(h, w[p + "ln2.g"], w[p + "ln2.b"])
            h = h + _gelu(a @ w[p + "ff1.w"] + w[p + "ff1.b"]) @ w[p + "ff2.w"] + w[p + "ff2.b"]
        h = _layer_norm(h, w["ln.g"], w["ln.b"])
        phone = (h @ w["phone.w"] + w["phone.b"])[:, 0]
        counts = np.bincount(word, minlength=n_words).astype(np.float64)
        pooled = np.zeros((n_words, self.width))
        np.add.at(pooled, word, h)
        pooled /= np.maximum(counts, 1.0)[:, None]
        words = (np.tanh(pooled @ w["word1.w"] + w["word1.b"]) @ w["word2.w"] + w["word2.b"])[:, 0]
        words = np.where(counts > 0, words, 0.0)
        t = (timing - w["timing.mean"]) / w["timing.sd"]
        u = np.concatenate([h.mean(axis=0), t])
        total = float(np.tanh(u @ w["utt1.w"] + w["utt1.b"]) @ w["utt2.w"][:, 0] + w["utt2.b"][0])
        return phone, words, total

    def to_bytes(self) -> bytes:
        """The weights as a ``.npz`` archive of float32 arrays (byte for byte the same for the same
        weights): ``m<i>.<name>`` per member and ``shape`` (layers, heads, width)."""
        arrays = {f"m{i}.{k}": v for i, member in enumerate(self.members) for k, v in member.items()}
        arrays["shape"] = np.array([self.layers, self.heads, self.width], dtype=np.float64)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name in sorted(arrays):
                item = io.BytesIO()
                np.lib.format.write_array(item, np.asarray(arrays[name], dtype=np.float32), allow_pickle=False)
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, item.getvalue())
        return buffer.getvalue()

    def sha256(self) -> str:
        """The SHA-256 of :meth:`to_bytes`, which ``assessment.json`` records."""
        return hashlib.sha256(self.to_bytes()).hexdigest()

    @classmethod
    def load(cls, data: bytes, sha256: str) -> SequenceModel:
        """The model in ``data`` (:meth:`to_bytes`), refused unless its SHA-256 is ``sha256``."""
        found = hashlib.sha256(data).hexdigest()
        if found != sha256:
            raise ValueError(f"sequence model file does not match its recorded hash ({found} != {sha256})")
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k], dtype=np.float64) for k in z.files}
        shape = arrays.pop("shape").astype(int)
        members: dict[int, dict[str, np.ndarray]] = {}
        for name, value in arrays.items():
            at, key = name.split(".", 1)
            value.setflags(write=False)
            members.setdefault(int(at[1:]), {})[key] = value
        return cls(tuple(members[i] for i in sorted(members)), int(shape[0]), int(shape[1]), int(shape[2]))
