"""The acoustic model: a reader for Sphinx-3 model files and senone scoring in numpy.

The pocketsphinx wheel ships a US-English phonetically-tied-mixture HMM under
``pocketsphinx/model/en-us/en-us``: 42 context-independent (CI) phones, 3
emitting states per phone, 5126 tied states (*senones*), one codebook of 128
diagonal Gaussians per CI phone and feature stream, and three feature streams
(cepstra, deltas, double deltas, 13 dimensions each).  A senone's likelihood is
the product over streams of a mixture over the codebook of its base CI phone,
with the senone's own (8-bit quantised) mixture weights.

Only numpy is used; pocketsphinx is imported solely to find its model folder.

Pitfalls handled here: mixture weights are stored as quantised negative log
values (base 1.0001, shifted by 10 bits); transition matrices are unnormalised
counts (normalised and floored); variances contain zeros (floored).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from learnloop._lru import LRUCache
from learnloop.errors import LearnloopError

__all__ = ["AcousticModel", "DensityCache", "SphinxModel", "default_model_dir"]

#: bytes of Gaussian densities a :class:`DensityCache` keeps by default: every codebook of an
#: utterance of about 8 s, a part of a longer one (evicted codebooks are computed again, exactly)
DENSITY_CACHE_BYTES = 48 * 2**20


class DensityCache(LRUCache[int, list[tuple[np.ndarray, np.ndarray]]]):
    """Each codebook's Gaussian densities on one utterance's frames, bounded by bytes.

    On long audio the densities of all codebooks would take several hundred MB
    (42 codebooks x 3 streams x frames x 128 Gaussians); the least recently used
    codebooks are dropped and computed again when needed.
    """

    def __init__(self, max_bytes: int = DENSITY_CACHE_BYTES) -> None:
        super().__init__(max_bytes=max_bytes, sizeof=lambda ds: sum(top.nbytes + p.nbytes for top, p in ds))

    def __setitem__(self, codebook: int, densities: list[tuple[np.ndarray, np.ndarray]]) -> None:
        self.put(codebook, densities)


"""Gaussian densities of codebooks on one utterance's frames (see ``SphinxModel.senone_loglik``)."""

_MAGIC = 0x11223344
_WORD_POSITIONS = {"i": 0, "b": 1, "e": 2, "s": 3}  # internal, begin, end, single
_MIXW_SCALE = 1024.0 * np.log(1.0001)  # 8-bit weight v means ln w = -v * _MIXW_SCALE
_VAR_FLOOR = 1e-4
_TRANS_FLOOR = 1e-4


class ModelFileError(LearnloopError, OSError):
    """An acoustic model file that is missing or malformed."""


class AcousticModel(Protocol):
    """What the aligner needs from an acoustic model (a one-method seam plus tables)."""

    phones: tuple[str, ...]

    def senone_loglik(self, features: np.ndarray, senones: np.ndarray) -> np.ndarray:
        """Log-likelihoods, shape ``(frames, len(senones))``, of the given senones."""
        ...


#: senones mixed at once in :meth:`SphinxModel.senone_loglik` (bounds its temporaries)
_SENONE_BLOCK = 256


def default_model_dir() -> Path:
    """The en-us model folder inside the installed pocketsphinx wheel."""
    try:
        import pocketsphinx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("pronunciation scoring needs the 'voice' extra: pip install 'learnloop[voice]'") from exc
    return Path(pocketsphinx.get_model_path()) / "en-us" / "en-us"


def _s3_payload(path: Path) -> tuple[memoryview, str]:
    """The bytes after a Sphinx-3 text header (and its byte-order magic), and the endianness."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path}: {exc}") from None
    marker = data.find(b"endhdr\n")
    if not data.startswith(b"s3") or marker < 0:
        raise ModelFileError(f"{path} is not a Sphinx-3 binary file")
    pos = marker + len(b"endhdr\n")
    (magic,) = struct.unpack_from("<I", data, pos)
    endian = "<" if magic == _MAGIC else ">"
    return memoryview(data)[pos + 4 :], endian


def _read_gauden(path: Path) -> np.ndarray:
    """Means or variances: shape (codebooks, streams, densities, dims)."""
    buf, e = _s3_payload(path)
    n_mgau, n_feat, n_density = struct.unpack_from(e + "3i", buf, 0)
    veclen = struct.unpack_from(e + f"{n_feat}i", buf, 12)
    if len(set(veclen)) != 1:
        raise ModelFileError(f"{path}: unequal stream lengths {veclen} are not supported")
    off = 12 + 4 * n_feat
    (total,) = struct.unpack_from(e + "i", buf, off)
    values = np.frombuffer(buf, dtype=e + "f4", count=total, offset=off + 4)
    return values.reshape(n_mgau, n_feat, n_density, veclen[0]).astype(np.float64)


def _read_tmat(path: Path) -> np.ndarray:
    """Log transition matrices, shape (n_tmat, n_emit, n_emit + 1), normalised and floored."""
    buf, e = _s3_payload(path)
    n_tmat, n_src, n_dst, total = struct.unpack_from(e + "4i", buf, 0)
    tp = np.frombuffer(buf, dtype=e + "f4", count=total, offset=16).astype(np.float64)
    tp = tp.reshape(n_tmat, n_src, n_dst)
    # Only transitions to self, next and skip-next exist in a Bakis topology.
    allowed = np.zeros((n_src, n_dst), dtype=bool)
    for i in range(n_src):
        allowed[i, i : min(i + 3, n_dst)] = True
    tp = np.where(allowed, np.maximum(tp, 0.0), 0.0)
    tp = tp / np.maximum(tp.sum(axis=2, keepdims=True), 1e-30)
    tp = np.where(allowed & (tp < _TRANS_FLOOR), _TRANS_FLOOR, tp)
    tp = tp / tp.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore"):
        return np.where(allowed, np.log(tp), -np.inf)


def _read_sendump(path: Path, n_feat: int) -> np.ndarray:
    """Natural-log mixture weights, shape (streams, densities, senones)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path}: {exc}") from None
    e = "<"
    (n,) = struct.unpack_from(e + "i", data, 0)
    if not 0 < n < 1000:
        e = ">"
        (n,) = struct.unpack_from(e + "i", data, 0)
    pos = 4 + n
    n_clust = 0
    while True:
        (n,) = struct.unpack_from(e + "i", data, pos)
        pos += 4
        if n == 0:
            break
        line = data[pos : pos + n].rstrip(b"\0").decode("ascii", "replace")
        if line.startswith("cluster_count "):
            n_clust = int(line.split()[1])
        pos += n
    if n_clust:
        raise ModelFileError(f"{path}: clustered (4-bit) mixture weights are not supported")
    rows, cols = struct.unpack_from(e + "2i", data, pos)
    pos += 8
    q = np.frombuffer(data, dtype=np.uint8, count=n_feat * rows * cols, offset=pos)
    return -q.reshape(n_feat, rows, cols).astype(np.float64) * _MIXW_SCALE  # type: ignore[no-any-return]


@dataclass(frozen=True, eq=False)
class _Mdef:
    phones: tuple[str, ...]
    n_emit: int
    n_ci_sen: int
    n_sen: int
    sil: int
    fillers: frozenset[int]
    phone_ssid: np.ndarray  # (n_phone,)
    phone_tmat: np.ndarray  # (n_phone,)
    sseq: np.ndarray  # (n_sseq, n_emit)
    triphones: dict[tuple[int, int, int, int], int]  # (ci, lc, rc, wpos) -> phone id


def _read_mdef(path: Path) -> _Mdef:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path}: {exc}") from None
    if data[:4] == b"BMDF":
        e = "<"
    elif data[:4] == b"FDMB":
        e = ">"
    else:
        raise ModelFileError(f"{path} is not a binary model definition (BMDF) file")
    (_version, desc_len) = struct.unpack_from(e + "2i", data, 4)
    pos = 12 + desc_len
    (n_ci, n_phone, n_emit, n_ci_sen, n_sen, _n_tmat, n_sseq, _n_ctx, n_tree, sil) = struct.unpack_from(
        e + "10i", data, pos
    )
    pos += 40
    start = pos
    names = []
    for _ in range(n_ci):
        end = data.index(b"\0", pos)
        names.append(data[pos:end].decode("ascii"))
        pos = end + 1
    pos = start + ((pos - start + 3) & ~3)
    tree = np.frombuffer(
        data,
        dtype=np.dtype([("ctx", e + "i2"), ("n_down", e + "i2"), ("down", e + "i4")]),
        count=n_tree,
        offset=pos,
    )
    pos += 8 * n_tree
    entries = np.frombuffer(
        data,
        dtype=np.dtype([("ssid", e + "i4"), ("tmat", e + "i4"), ("info", "u1", (4,))]),
        count=n_phone,
        offset=pos,
    )
    pos += 12 * n_phone
    (sseq_size,) = struct.unpack_from(e + "i", data, pos)
    sseq = np.frombuffer(data, dtype=e + "u2", count=sseq_size, offset=pos + 4)
    sseq = sseq.reshape(n_sseq, n_emit).astype(np.int64)
    fillers = frozenset(i for i in range(n_ci) if entries["info"][i][0])
    # Walk the context tree: word position -> CI phone -> left -> right -> phone id.
    triphones: dict[tuple[int, int, int, int], int] = {}

    def walk(first: int, count: int, path_: tuple[int, ...]) -> None:
        for node in range(first, first + count):
            ctx, n_down, down = (int(v) for v in tree[node])
            here = (*path_, ctx)
            if n_down == 0:
                if len(here) == 4:
                    wpos, ci, lc, rc = here
                    triphones[(ci, lc, rc, wpos)] = down
            else:
                walk(down, n_down, here)

    walk(0, len(_WORD_POSITIONS), ())
    return _Mdef(
        phones=tuple(names),
        n_emit=n_emit,
        n_ci_sen=n_ci_sen,
        n_sen=n_sen,
        sil=sil,
        fillers=fillers,
        phone_ssid=entries["ssid"].astype(np.int64),
        phone_tmat=entries["tmat"].astype(np.int64),
        sseq=sseq,
        triphones=triphones,
    )


class SphinxModel:
    """A semi-continuous (PTM) Sphinx acoustic model held in numpy arrays.

    Loading takes about a second; share one instance (it is read-only and
    thread-safe once built).
    """

    def __init__(self, model_dir: str | Path | None = None) -> None:
        folder = Path(model_dir) if model_dir is not None else default_model_dir()
        self.model_dir = folder
        mdef = _read_mdef(folder / "mdef")
        means = _read_gauden(folder / "means")
        variances = np.maximum(_read_gauden(folder / "variances"), _VAR_FLOOR)
        n_cb, n_feat, n_density, dim = means.shape
        self.phones: tuple[str, ...] = mdef.phones
        self.phone_index = {p: i for i, p in enumerate(mdef.phones)}
        self.n_emit = mdef.n_emit
        self.silence = mdef.sil
        self.fillers = mdef.fillers
        self.n_streams = n_feat
        self.stream_dim = dim
        self._mdef = mdef
        self.log_trans = _read_tmat(folder / "transition_matrices")
        self._weights = np.exp(_read_sendump(folder / "sendump", n_feat)).astype(np.float32)
        phone_senones = mdef.sseq[mdef.phone_ssid]  # (n_phone, n_emit)
        sen_cb = np.full(mdef.n_sen, -1, dtype=np.int64)
        for ci in range(len(mdef.phones)):
            sen_cb[phone_senones[ci]] = ci
        # CD phones: the codebook is the base CI phone; recover it from the tree.
        for (ci, _lc, _rc, _w), pid in mdef.triphones.items():
            sen_cb[phone_senones[pid]] = ci
        self.phone_senones = phone_senones
        self.senone_codebook = sen_cb
        # Gaussian log-density as a quadratic form:  x² · a + x · b + c.
        inv = 1.0 / variances
        self._quad_a = (-0.5 * inv).astype(np.float32)  # (cb, f, k, d)
        self._quad_b = (means * inv).astype(np.float32)
        self._quad_c = (
            -0.5 * (np.sum(means**2 * inv, axis=-1) + np.sum(np.log(2 * np.pi * variances), axis=-1))
        ).astype(np.float32)  # (cb, f, k)
        self.n_codebooks = n_cb
        self.n_density = n_density

    # -- lookups -----------------------------------------------------------------
    def phone_id(self, phone: str, left: str | None, right: str | None, position: str) -> int:
        """The triphone id of ``phone`` in context, backing off to the CI phone.

        ``position`` is one of ``"b"``, ``"i"``, ``"e"``, ``"s"`` (word begin,
        internal, end, single-phone word).
        """
        ci = self.phone_index[phone]
        if left is None or right is None:
            return ci
        key_l, key_r = self._ctx(left), self._ctx(right)
        wpos = _WORD_POSITIONS[position]
        pid = self._mdef.triphones.get((ci, key_l, key_r, wpos))
        if pid is None:  # back off over word positions before giving up on context
            for other in (0, 1, 2, 3):
                pid = self._mdef.triphones.get((ci, key_l, key_r, other))
                if pid is not None:
                    break
        return ci if pid is None else pid

    def _ctx(self, phone: str) -> int:
        idx = self.phone_index[phone]
        return self.silence if idx in self.fillers else idx

    def transitions(self, phone_id: int) -> np.ndarray:
        """Log transition matrix ``(n_emit, n_emit + 1)`` of a phone."""
        return self.log_trans[self._mdef.phone_tmat[phone_id]]  # type: ignore[no-any-return]

    # -- scoring -----------------------------------------------------------------
    def senone_loglik(
        self, features: np.ndarray, senones: np.ndarray, *, cache: DensityCache | None = None
    ) -> np.ndarray:
        """Log-likelihood of each frame under each senone, shape ``(T, len(senones))``.

        ``features`` is ``(T, streams * dim)`` as made by :func:`learnloop.voice.features.mfcc_features`.
        Only the codebooks the requested senones use are evaluated.  ``cache``
        (a dict kept by the caller for *these* features only) keeps each
        codebook's Gaussian densities, so that later calls on the same frames
        only mix them.
        """
        senones = np.asarray(senones, dtype=np.int64)
        x = np.asarray(features, dtype=np.float32).reshape(len(features), self.n_streams, self.stream_dim)
        out = np.zeros((len(x), len(senones)), dtype=np.float64)
        cbs = self.senone_codebook[senones]
        for cb in np.unique(cbs):
            cols = np.nonzero(cbs == cb)[0]
            sen = senones[cols]
            densities = None if cache is None else cache.get(int(cb))
            if densities is None:
                densities = [self._densities(x[:, f, :], int(cb), f) for f in range(self.n_streams)]
                if cache is not None:
                    cache[int(cb)] = densities
            # mixed a block of senones at a time, so that the temporaries stay small on long audio
            for at in range(0, len(cols), _SENONE_BLOCK):
                block = sen[at : at + _SENONE_BLOCK]
                total = np.zeros((len(x), len(block)), dtype=np.float64)
                for f, (top, p) in enumerate(densities):
                    mixed = p @ self._weights[f][:, block]
                    np.maximum(mixed, 1e-30, out=mixed)
                    np.log(mixed, out=mixed)
                    total += mixed
                    total += top
                out[:, cols[at : at + _SENONE_BLOCK]] = total
        return out

    def _densities(self, xf: np.ndarray, cb: int, f: int) -> tuple[np.ndarray, np.ndarray]:
        """One codebook's Gaussian densities on one stream, scaled: ``(top (T, 1), p (T, k))``."""
        g = (xf * xf) @ self._quad_a[cb, f].T + xf @ self._quad_b[cb, f].T + self._quad_c[cb, f]
        top = g.max(axis=1, keepdims=True)
        return top, np.exp(g - top)

    def ci_senones(self) -> np.ndarray:
        """Senone ids of every CI phone, shape ``(n_ci, n_emit)``."""
        return self.phone_senones[: len(self.phones)]  # type: ignore[no-any-return]
