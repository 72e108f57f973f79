"""Which aggregates may be published while some datasets are sealed: linear algebra, no Django.

An aggregate column (MRQA's macro F1, a split's F1, SQuAD 2.0's mean F1...) is the mean of
one per-dataset metric, its *family*, over a known set of datasets.  Whoever sees the
per-dataset values of the visible datasets and some published means can solve a linear
system, so a sealed dataset's value follows from them exactly when its unit vector lies in
the span of the published means' vectors and the visible datasets' unit vectors.  Examples:
one sealed dataset in a phase (its F1 = n x macro F1 - the visible F1s), or one of the two
Split III datasets revealed (sealed = 2 x Split III F1 - revealed).

Families are not kept apart, although a mean of F1s says nothing linear about EMs: some
families are linear functions of others on every dataset (the interactive protocol's
``gold_own_drop`` is ``f1 - own_f1``; CoQA's in-domain F1 is its F1 where every story is
in-domain), and then averages of different families over different datasets combine into a
sealed value (4 x (own F1 + drop) - 3 x F1 isolates the one dataset only the first two cover).
So every average is one more equation on one unknown per dataset: a combination that isolates
a dataset under that reading is refused, whichever families it mixes.  Where the families are
over the same datasets (macro F1 and macro EM), this withholds nothing more.  The visible datasets'
unit vectors are in the span anyway, so they are projected out and the vectors keep only
their sealed coordinates; the test is then a rank comparison, in exact fractions because
1/3 and 1/7 must cancel exactly, not nearly.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence, Set
from dataclasses import dataclass
from fractions import Fraction

Vector = list[Fraction]


@dataclass(frozen=True)
class Average:
    """An aggregate: the mean of the per-dataset metric ``family`` over the datasets ``over``."""

    name: str
    family: str
    over: frozenset[Hashable]


def averages_to_publish(averages: Sequence[Average], *, sealed: Set[Hashable], strict: bool = False) -> set[str]:
    """The names of the averages that can be shown with every non-sealed dataset's values.

    Greedy, in the given order (put the ranking metric first): an average is published
    unless, together with those published before it, it would determine a sealed value.
    With ``strict``, every average that covers a sealed dataset is withheld.
    """
    sealed = frozenset(sealed)
    coordinates = {key: index for index, key in enumerate(sealed)}
    published: set[str] = set()
    rows: list[Vector] = []
    for average in averages:
        hidden = average.over & sealed
        if not hidden:
            published.add(average.name)  # visible datasets only: nothing sealed follows from it
            continue
        if strict:
            continue
        weight = Fraction(1, len(average.over))
        vector = [Fraction(0)] * len(coordinates)
        for key in hidden:
            vector[coordinates[key]] = weight
        candidate = [*rows, vector]  # one unknown per dataset, whatever the family (see the notes)
        if not isolates_a_coordinate(candidate):
            rows = candidate
            published.add(average.name)
    return published


def isolates_a_coordinate(vectors: Sequence[Vector]) -> bool:
    """Whether some unit vector lies in the span of ``vectors`` (all of one length).

    e_i is in the span exactly when adding it leaves the rank unchanged; only
    coordinates some vector touches can qualify.
    """
    if not vectors:
        return False
    base = rank(vectors)
    size = len(vectors[0])
    for i in range(size):
        if all(v[i] == 0 for v in vectors):
            continue
        unit = [Fraction(int(j == i)) for j in range(size)]
        if rank([*vectors, unit]) == base:
            return True
    return False


def rank(vectors: Sequence[Vector]) -> int:
    """The rank of a small matrix of fractions, by Gaussian elimination (exact)."""
    matrix = [list(v) for v in vectors]
    if not matrix:
        return 0
    found = 0
    for column in range(len(matrix[0])):
        pivot = next((r for r in range(found, len(matrix)) if matrix[r][column] != 0), None)
        if pivot is None:
            continue
        matrix[found], matrix[pivot] = matrix[pivot], matrix[found]
        for r in range(len(matrix)):
            if r != found and matrix[r][column] != 0:
                factor = matrix[r][column] / matrix[found][column]
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[found])]
        found += 1
        if found == len(matrix):
            break
    return found


def isolated_coordinates(vectors: Sequence[Vector]) -> list[int]:
    """The coordinates whose unit vector lies in the span of ``vectors``: the values that follow."""
    if not vectors:
        return []
    base = rank(vectors)
    size = len(vectors[0])
    return [i for i in range(size) if any(v[i] != 0 for v in vectors)
            and rank([*vectors, [Fraction(int(j == i)) for j in range(size)]]) == base]


def exposed_by_reveal(published: Sequence[Average], *, sealed_after: Set[Hashable]) -> set[Hashable]:
    """The datasets still sealed after a reveal whose value follows from averages ``published``
    before it (computed while the revealed dataset was sealed too), once its values are public.

    Example: Split III F1 over two sealed datasets was public; reveal one, and the other is
    2 x that average - the revealed one.  Withholding the average from now on does not help:
    it may have been copied.
    """
    keys = sorted(sealed_after, key=str)
    coordinates = {key: index for index, key in enumerate(keys)}
    vectors = []
    for average in published:
        hidden = average.over & frozenset(keys)
        if not hidden:
            continue
        weight = Fraction(1, len(average.over))
        vector = [Fraction(0)] * len(keys)
        for key in hidden:
            vector[coordinates[key]] = weight
        vectors.append(vector)
    return {keys[i] for i in isolated_coordinates(vectors)}
