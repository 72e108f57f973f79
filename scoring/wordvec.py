"""Word vectors in GloVe's text format: reading them, and training small ones with numpy alone.

GloVe's text format (``glove.6B.100d.txt``): one word per line followed by its
components, all separated by single spaces, no header.  :func:`load_glove` also
skips a word2vec-style ``COUNT DIM`` first line and reads gzipped files.

:func:`train_ppmi_svd` exists because GloVe cannot be downloaded here: it
builds vectors from the texts at hand so that tools needing vectors can run.
The method is the count-based one of Levy, Goldberg and Dagan (2015,
"Improving Distributional Similarity with Lessons Learned from Word
Embeddings"): co-occurrence counts within a window (GloVe's 1/distance
weighting), positive PMI with context-distribution smoothing (0.75), and a
rank-``dim`` truncated SVD whose left vectors are scaled by the square roots of
the singular values.  The SVD is randomised (Halko, Martinsson and Tropp 2011)
with a seeded Gaussian start, and every sparse product is done with numpy, so
the output depends only on the inputs and the seed.
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, NamedTuple

import numpy as np
import numpy.typing as npt

from scoring.errors import InputFormatError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_GZIP_MAGIC = b"\x1f\x8b"


# --------------------------------------------------------------------------- reading and writing


@dataclass(frozen=True)
class WordVectors:
    """Unit-length vectors, row ``index[word]`` of ``unit``; words whose vector is zero are left out."""

    index: dict[str, int]
    unit: FloatArray

    @classmethod
    def from_mapping(cls, vectors: Mapping[str, Sequence[float]]) -> WordVectors:
        words = list(vectors)
        matrix = np.array([vectors[w] for w in words], dtype=np.float64).reshape(len(words), -1)
        return cls.from_matrix(words, matrix)

    @classmethod
    def from_matrix(cls, words: Sequence[str], matrix: FloatArray) -> WordVectors:
        norms = np.linalg.norm(matrix, axis=1)
        # A zero vector has no direction, so no cosine: the word counts as out of vocabulary.
        keep = np.flatnonzero(norms > 0)
        return cls({words[i]: n for n, i in enumerate(keep.tolist())}, matrix[keep] / norms[keep, None])

    def ids(self, words: Iterable[str]) -> IntArray:
        """Rows of the words that have a vector, in order (repeats kept)."""
        index = self.index
        return np.array([index[w] for w in words if w in index], dtype=np.int64)


def _open_text(path: str) -> IO[str]:
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
    except FileNotFoundError:
        raise InputFormatError("file not found", path=path) from None
    except IsADirectoryError:
        raise InputFormatError("is a directory, expected a file", path=path) from None
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _numbered_lines(path: str) -> Iterator[tuple[int, str]]:
    with _open_text(path) as fh:
        try:
            yield from enumerate(fh, start=1)
        except UnicodeDecodeError:
            raise InputFormatError("not valid UTF-8", path=path) from None


def _is_word2vec_header(parts: Sequence[str]) -> bool:
    return len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit()


def load_glove(path: str | os.PathLike[str], *, keep: Collection[str] | None = None) -> WordVectors:
    """Vectors of a GloVe text file; with ``keep``, only those words are parsed (glove.6B has 400,000).

    The first occurrence of a word wins.  A line whose components are too few
    or not numbers is an error naming the line; a word holding spaces
    (glove.840B has a few) is everything before the last ``dim`` fields.
    """
    name = os.fspath(path)
    dim = 0
    words: list[str] = []
    rows: list[FloatArray] = []
    seen: set[str] = set()
    for number, line in _numbered_lines(name):
        if not line.strip():
            continue
        if dim == 0:
            parts = line.rstrip().split(" ")
            if number == 1 and _is_word2vec_header(parts):
                dim = int(parts[1])
                continue
            dim = len(parts) - 1
            if dim < 1:
                raise InputFormatError("expected a word and its vector components on each line", path=name, line=number)
        # Split the word off first: most lines of a large file are words nobody asked for.
        word = line.partition(" ")[0]
        if keep is not None and word not in keep:
            continue
        parts = line.rstrip().split(" ")
        if len(parts) < dim + 1:
            raise InputFormatError(f"expected {dim} components, found {len(parts) - 1}", path=name, line=number)
        word = " ".join(parts[:-dim])
        if word in seen:
            continue
        try:
            rows.append(np.array(parts[-dim:], dtype=np.float64))
        except ValueError:
            raise InputFormatError("a vector component is not a number", path=name, line=number) from None
        seen.add(word)
        words.append(word)
    matrix = np.vstack(rows) if rows else np.zeros((0, max(dim, 1)))
    return WordVectors.from_matrix(words, matrix)


def write_glove(path: str | os.PathLike[str], words: Sequence[str], vectors: FloatArray, *, decimals: int = 6) -> None:
    """Write ``words`` and their rows of ``vectors`` in GloVe's text format, atomically."""
    name = os.fspath(path)
    tmp = f"{name}.tmp{os.getpid()}"
    fmt = f"{{:.{decimals}f}}"
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        for word, row in zip(words, vectors.tolist()):
            fh.write(word + " " + " ".join(map(fmt.format, row)) + "\n")
    os.replace(tmp, name)


# --------------------------------------------------------------------------- training


class _Csr(NamedTuple):
    """A sparse matrix, row-major: ``rows[k], indices[k], data[k]`` sorted by row."""

    rows: IntArray
    indices: IntArray
    data: FloatArray
    shape: tuple[int, int]

    def transpose(self) -> _Csr:
        order = np.lexsort((self.rows, self.indices))
        return _Csr(self.indices[order], self.rows[order], self.data[order], (self.shape[1], self.shape[0]))

    def matmul(self, dense: FloatArray, *, chunk: int = 1 << 14) -> FloatArray:
        """``self @ dense``, in slices of ``chunk`` nonzeros to bound the temporary memory."""
        out = np.zeros((self.shape[0], dense.shape[1]))
        for start in range(0, self.data.size, chunk):
            stop = min(start + chunk, self.data.size)
            rows = self.rows[start:stop]
            products = self.data[start:stop, None] * dense[self.indices[start:stop]]
            # Rows are sorted, so each run of one row is summed once and its index is unique here.
            runs = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            out[rows[runs]] += np.add.reduceat(products, runs, axis=0)
        return out


def vocabulary(texts: Iterable[Sequence[str]], *, min_count: int, max_words: int) -> list[str]:
    """Words seen at least ``min_count`` times, the ``max_words`` most frequent (ties alphabetically)."""
    counts: Counter[str] = Counter()
    for words in texts:
        counts.update(words)
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    return kept[:max_words]


def _token_stream(texts: Iterable[Sequence[str]], index: Mapping[str, int], window: int) -> IntArray:
    """Word ids of every text, out-of-vocabulary words removed (as GloVe's cooccur does), texts
    separated by ``window`` fillers (-1) so that no window spans two texts."""
    pieces: list[int] = []
    gap = [-1] * window
    for words in texts:
        pieces.extend(index[w] for w in words if w in index)
        pieces.extend(gap)
    return np.array(pieces, dtype=np.int64)


def _merge_counts(keys: IntArray, weights: FloatArray) -> tuple[IntArray, FloatArray]:
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse.ravel(), weights=weights, minlength=unique.size).astype(np.float64)


def cooccurrences(stream: IntArray, n_words: int, window: int) -> tuple[IntArray, FloatArray]:
    """Symmetric co-occurrence counts as (sorted keys ``row * n_words + col``, weights), each pair at
    distance d weighing 1/d as in GloVe.  Counts are merged offset by offset to keep memory small."""
    keys: IntArray = np.zeros(0, dtype=np.int64)
    weights: FloatArray = np.zeros(0)
    for distance in range(1, window + 1):
        left, right = stream[:-distance], stream[distance:]
        both = (left >= 0) & (right >= 0)
        left, right = left[both], right[both]
        new_keys = np.concatenate([left * n_words + right, right * n_words + left])
        new_weights = np.full(new_keys.size, 1.0 / distance)
        keys, weights = _merge_counts(np.concatenate([keys, new_keys]), np.concatenate([weights, new_weights]))
    return keys, weights


def ppmi(keys: IntArray, counts: FloatArray, n_words: int, *, smoothing: float = 0.75) -> _Csr:
    """Positive PMI of the counted pairs, contexts' probabilities raised to ``smoothing`` (Levy et al.)."""
    rows, cols = keys // n_words, keys % n_words
    word_totals = np.bincount(rows, weights=counts, minlength=n_words)
    context_mass = np.bincount(cols, weights=counts, minlength=n_words) ** smoothing
    context_p = context_mass / context_mass.sum()
    # PMI = log(P(w, c) / (P(w) P(c))) = log(count / (count(w) * P(c))) with P(c) smoothed.
    values = np.log(counts / (word_totals[rows] * context_p[cols]))
    positive = values > 0
    return _Csr(rows[positive], cols[positive], values[positive], (n_words, n_words))


def truncated_svd(matrix: _Csr, rank: int, *, seed: int, oversample: int = 10, iterations: int = 2) -> tuple[FloatArray, FloatArray]:
    """The ``rank`` leading left singular vectors and values of ``matrix`` (randomised, seeded).

    Each vector's sign is fixed (its largest component is positive) so the
    result does not depend on the LAPACK routine's choice.
    """
    width = min(rank + oversample, *matrix.shape)
    transposed = matrix.transpose()
    start = np.random.default_rng(seed).standard_normal((matrix.shape[1], width))
    basis, _ = np.linalg.qr(matrix.matmul(start))
    # Power iterations sharpen the basis when the spectrum decays slowly, as PMI spectra do.
    for _ in range(iterations):
        back, _ = np.linalg.qr(transposed.matmul(basis))
        basis, _ = np.linalg.qr(matrix.matmul(back))
    small = transposed.matmul(basis).T
    left, values, _ = np.linalg.svd(small, full_matrices=False)
    vectors = basis @ left[:, :rank]
    biggest = np.abs(vectors).argmax(axis=0)
    signs = np.sign(vectors[biggest, np.arange(vectors.shape[1])])
    signs[signs == 0] = 1.0
    return vectors * signs, values[:rank]


@dataclass(frozen=True)
class TrainedVectors:
    words: list[str]
    vectors: FloatArray
    tokens: int
    pairs: int


def train_ppmi_svd(
    texts: Sequence[Sequence[str]], *, dim: int = 100, window: int = 5, min_count: int = 2,
    max_words: int = 50_000, seed: int = 0,
) -> TrainedVectors:
    """Word vectors from tokenised ``texts`` (see the module docstring); words left with a zero
    vector (no positive PMI) are dropped.  Memory grows with the distinct co-occurring pairs."""
    if dim < 1 or window < 1 or min_count < 1 or max_words < 1:
        raise ValueError("dim, window, min_count and max_words must be positive")
    words = vocabulary(texts, min_count=min_count, max_words=max_words)
    index = {w: i for i, w in enumerate(words)}
    stream = _token_stream(texts, index, window)
    keys, counts = cooccurrences(stream, len(words), window)
    matrix = ppmi(keys, counts, len(words))
    if matrix.data.size == 0:
        return TrainedVectors([], np.zeros((0, dim)), int((stream >= 0).sum()), 0)
    left, values = truncated_svd(matrix, dim, seed=seed)
    vectors = left * np.sqrt(values)
    if vectors.shape[1] < dim:
        # Fewer words than dimensions: pad, so every line has the announced width.
        vectors = np.hstack([vectors, np.zeros((vectors.shape[0], dim - vectors.shape[1]))])
    nonzero = np.flatnonzero(np.abs(vectors).sum(axis=1) > 0)
    return TrainedVectors([words[i] for i in nonzero], vectors[nonzero], int((stream >= 0).sum()), int(keys.size))
