"""Leaderboard ranking: competition ranks, ties, missing scores, average rank.

Policies (the leaderboard relies on them):

* **Competition ranking** ("1224"): a row's rank is one plus the number of
  rows strictly better than it, so tied rows share a rank and the next rank
  skips.
* **Missing scores** (``None`` or NaN, e.g. a submission that failed) get
  **no rank** (``rank is None``) and are listed after every ranked row, in
  their input order, like the failed systems with null scores at the bottom
  of the MRQA 2019 board.
* **Tie tolerance**: with ``decimals=d`` two scores tie when they are equal
  after ``round(score, d)``, i.e. when the board displays the same digits
  (``round`` and ``format(x, ".2f")`` both round the exact binary value, so
  they agree).  The default (``None``) compares exact values.
* **Tie-breakers** (``then=``): later keys only order rows whose earlier keys
  tie; a missing tie-breaker value counts as worse than any present one.
  Rows still tied on every key share a rank.  Inside a tie the display order
  is by the unrounded values, then by input order (stable).
* **Average rank** across several metrics or datasets: each metric ranks the
  rows on its own; a row missing a metric takes the rank after the last
  scored row for it (``missing="last"``) or gets no average rank at all
  (``missing="unranked"``); a row with no score anywhere is never ranked.
  Rows are then ranked by the sum of their ranks (an exact integer, so equal
  averages tie exactly), lower is better.
"""

from __future__ import annotations

import argparse
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from scoring.cli import add_common_options
from scoring.errors import InputFormatError
from scoring.io import json_type, load_json
from scoring.result import EvalResult

T = TypeVar("T")

MissingPolicy = Literal["last", "unranked"]


@dataclass(frozen=True)
class RankKey(Generic[T]):
    """One ranking criterion: how to read a row's score and which way is better."""

    key: Callable[[T], float | None]
    higher_is_better: bool = True
    decimals: int | None = None


@dataclass(frozen=True)
class RankedRow(Generic[T]):
    """A row with its competition rank (``None`` when its primary score is missing)."""

    row: T
    rank: int | None
    scores: tuple[float | None, ...]  # the keys' raw values, primary first; NaN reads as None
    tied: bool  # shares its rank with at least one other row

    @property
    def score(self) -> float | None:
        return self.scores[0]


@dataclass(frozen=True)
class AverageRankedRow(Generic[T]):
    """A row ranked by its average rank over several keys (lower is better)."""

    row: T
    rank: int | None
    average_rank: float | None
    ranks: tuple[int | None, ...]  # the rank under each key; None where that score is missing
    tied: bool


def as_score(value: object) -> float | None:
    """A key's value as a float, ``None`` for a missing score (None or NaN)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"a score must be a number or None, got {type(value).__name__}")
    score = float(value)
    return None if math.isnan(score) else score


def _comparable(score: float, key: RankKey[Any]) -> float:
    """The value compared for ties and order, oriented so that smaller is better."""
    value = round(score, key.decimals) if key.decimals is not None else score
    return -value if key.higher_is_better else value


def rank_by(rows: Sequence[T], keys: Sequence[RankKey[T]]) -> list[RankedRow[T]]:
    """Rank ``rows`` by ``keys[0]``, breaking ties with the later keys (see the module notes)."""
    if not keys:
        raise ValueError("rank_by needs at least one key")
    ranked: list[tuple[tuple[tuple[int, float], ...], tuple[float, ...], int, tuple[float | None, ...]]] = []
    unranked: list[tuple[float | None, ...]] = []
    unranked_rows: list[T] = []
    for index, row in enumerate(rows):
        scores = tuple(as_score(k.key(row)) for k in keys)
        if scores[0] is None:
            unranked.append(scores)
            unranked_rows.append(row)
            continue
        # (0, value) sorts before (1, 0.0): a missing tie-breaker loses the tie.
        compared = tuple((0, _comparable(s, k)) if s is not None else (1, 0.0) for s, k in zip(scores, keys))
        raw = tuple((-s if k.higher_is_better else s) if s is not None else math.inf for s, k in zip(scores, keys))
        ranked.append((compared, raw, index, scores))
    ranked.sort(key=lambda item: (item[0], item[1], item[2]))

    out: list[RankedRow[T]] = []
    ranks = _competition_ranks([item[0] for item in ranked])
    sizes = _tie_sizes(ranks)
    for (_, _, index, scores), rank in zip(ranked, ranks):
        out.append(RankedRow(row=rows[index], rank=rank, scores=scores, tied=sizes[rank] > 1))
    for row, scores in zip(unranked_rows, unranked):
        out.append(RankedRow(row=row, rank=None, scores=scores, tied=False))
    return out


def rank_rows(
    rows: Sequence[T],
    key: Callable[[T], float | None],
    *,
    higher_is_better: bool = True,
    decimals: int | None = None,
    then: Sequence[RankKey[T]] = (),
) -> list[RankedRow[T]]:
    """Rank rows by one metric (best first); ``then`` adds tie-breakers.

    >>> [(r.row, r.rank) for r in rank_rows([("a", 1.0), ("b", 3.0), ("c", 3.0), ("d", None)],
    ...                                     key=lambda r: r[1])]
    [(('b', 3.0), 1), (('c', 3.0), 1), (('a', 1.0), 3), (('d', None), None)]
    """
    return rank_by(rows, [RankKey(key, higher_is_better, decimals), *then])


def average_ranks(
    rows: Sequence[T],
    keys: Sequence[RankKey[T]],
    *,
    missing: MissingPolicy = "last",
) -> list[AverageRankedRow[T]]:
    """Rank rows by their average rank over ``keys`` (each key ranked on its own)."""
    if not keys:
        raise ValueError("average_ranks needs at least one key")
    if missing not in ("last", "unranked"):
        raise ValueError(f"missing must be 'last' or 'unranked', not {missing!r}")
    n = len(rows)
    per_key: list[list[int | None]] = []
    for key in keys:
        ranks: list[int | None] = [None] * n
        for ranked in _rank_indices(rows, key):
            ranks[ranked[0]] = ranked[1]
        per_key.append(ranks)

    totals: list[tuple[int, int]] = []  # (sum of ranks, input index)
    row_ranks: list[tuple[int | None, ...]] = []
    for i in range(n):
        mine = tuple(ranks[i] for ranks in per_key)
        row_ranks.append(mine)
        if all(r is None for r in mine):
            continue
        if any(r is None for r in mine) and missing == "unranked":
            continue
        total = 0
        for k, r in enumerate(mine):
            if r is None:  # after every row scored on this key
                r = sum(1 for x in per_key[k] if x is not None) + 1
            total += r
        totals.append((total, i))
    totals.sort()
    final = _competition_ranks([t for t, _ in totals])
    sizes = _tie_sizes(final)
    out: list[AverageRankedRow[T]] = []
    placed: set[int] = set()
    for (total, i), rank in zip(totals, final):
        placed.add(i)
        out.append(AverageRankedRow(row=rows[i], rank=rank, average_rank=total / len(keys),
                                    ranks=row_ranks[i], tied=sizes[rank] > 1))
    for i in range(n):
        if i not in placed:
            out.append(AverageRankedRow(row=rows[i], rank=None, average_rank=None, ranks=row_ranks[i], tied=False))
    return out


def _rank_indices(rows: Sequence[T], key: RankKey[T]) -> list[tuple[int, int]]:
    """``(input index, rank)`` for every row that has a score under ``key``."""
    indexed = [(i, row) for i, row in enumerate(rows)]
    ranked = rank_by(indexed, [RankKey(lambda pair: key.key(pair[1]), key.higher_is_better, key.decimals)])
    return [(r.row[0], r.rank) for r in ranked if r.rank is not None]


def _competition_ranks(ordered: Sequence[object]) -> list[int]:
    """Competition ranks of already sorted comparison values: equal values share a rank."""
    ranks: list[int] = []
    for position, value in enumerate(ordered):
        if position and value == ordered[position - 1]:
            ranks.append(ranks[-1])
        else:
            ranks.append(position + 1)
    return ranks


def _tie_sizes(ranks: Sequence[int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for rank in ranks:
        sizes[rank] = sizes.get(rank, 0) + 1
    return sizes


# --- command line -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One leaderboard entry read from a results file."""

    name: str
    metrics: Mapping[str, Any]
    line: int  # position in the file's list, 1-based, for messages


def load_results(path: str, *, strict: bool = False, warn: Callable[[str], None] = lambda _: None) -> list[Entry]:
    """Read ``[{"name": ..., "metrics": {...}}, ...]`` (or flat ``{"name": ..., "f1": ...}`` objects)."""
    data = load_json(path)
    if isinstance(data, dict) and isinstance(data.get("entries"), list):
        data = data["entries"]
    if not isinstance(data, list):
        raise InputFormatError(
            f"expected a JSON list of entries like {{\"name\": ..., \"metrics\": {{...}}}}, "
            f"found {json_type(data)}", path=path)
    entries: list[Entry] = []
    seen: set[str] = set()
    for number, item in enumerate(data, start=1):
        where = f" (entry {number})"
        if not isinstance(item, dict):
            raise InputFormatError(f"entry {number} should be an object, found {json_type(item)}", path=path)
        name = item.get("name")
        if not isinstance(name, str):
            raise InputFormatError(f"entry {number} needs a string field 'name'{'' if name is None else ', found ' + json_type(name)}",
                                   path=path)
        metrics = item.get("metrics", item)
        if not isinstance(metrics, dict):
            raise InputFormatError(f"field 'metrics'{where} should be an object, found {json_type(metrics)}",
                                   path=path, qid=name)
        if name in seen:
            if strict:
                raise InputFormatError("entry name appears more than once", path=path, qid=name)
            warn(f"{path}: entry name {name!r} appears more than once; both entries are ranked")
        seen.add(name)
        entries.append(Entry(name=name, metrics=metrics, line=number))
    return entries


_ABSENT = object()


def lookup_metric(metrics: Mapping[str, Any], metric: str) -> Any:
    """``metrics[metric]``, or a dotted path into nested objects (``"SQuAD.f1"``); _ABSENT if neither."""
    if metric in metrics:
        return metrics[metric]
    node: Any = metrics
    for part in metric.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def metric_reader(entries: Sequence[Entry], metric: str, path: str) -> Callable[[Entry], float | None]:
    """Validate ``metric`` in every entry and return a key function reading it.

    An entry without the metric has a missing score (a failed run); a metric
    found in no entry at all is a typo, and an error.
    """
    values: dict[int, float | None] = {}
    found = False
    for entry in entries:
        raw = lookup_metric(entry.metrics, metric)
        if raw is _ABSENT or raw is None:
            values[entry.line] = None
            continue
        found = True
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise InputFormatError(f"metric {metric!r} should be a number or null, found {json_type(raw)}",
                                   path=path, qid=entry.name)
        values[entry.line] = as_score(raw)
    if entries and not found:
        available = sorted({k for e in entries for k in e.metrics if k != "name"})
        raise InputFormatError(f"metric {metric!r} is in no entry (available: {', '.join(available) or 'none'})",
                               path=path)
    return lambda entry: values[entry.line]


def parse_metric_spec(spec: str) -> tuple[str, bool]:
    """``"em"`` -> ("em", higher is better); ``"em:lower"`` / ``"em:higher"`` set the direction."""
    name, sep, direction = spec.rpartition(":")
    if sep and direction in ("lower", "higher"):
        return name, direction == "higher"
    return spec, True


def register(subparsers: Any) -> None:

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "rank",
        help="rank leaderboard entries by a metric (competition ranks, ties, missing scores last)",
        description="Rank the entries of RESULTS.json, a list of {\"name\": ..., \"metrics\": {...}} objects. "
                    "Metric names may be dotted paths into nested metrics (e.g. SQuAD.f1).",
    )
    parser.add_argument("results", metavar="RESULTS.json")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--metric", help="the metric to rank by")
    what.add_argument("--average-rank", nargs="+", metavar="METRIC[:lower]",
                      help="rank by the average of the ranks under these metrics")
    parser.add_argument("--lower-is-better", action="store_true", help="smaller values of --metric rank higher")
    parser.add_argument("--decimals", type=int, default=None,
                        help="scores equal after rounding to this many decimals tie (default: exact)")
    parser.add_argument("--then", action="append", default=[], metavar="METRIC[:lower]",
                        help="tie-breaker metric (repeatable, in order)")
    parser.add_argument("--missing", choices=("last", "unranked"), default="last",
                        help="--average-rank: a missing metric ranks after all scored rows (last) "
                             "or leaves the row unranked")
    add_common_options(parser, rounding=False)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:
    warnings: list[str] = []
    entries = load_results(args.results, strict=args.strict, warn=warnings.append)
    if args.average_rank:
        return _run_average(args, entries, warnings)
    keys: list[RankKey[Entry]] = [RankKey(metric_reader(entries, args.metric, args.results),
                                          not args.lower_is_better, args.decimals)]
    names = [args.metric]
    for spec in args.then:
        name, higher = parse_metric_spec(spec)
        keys.append(RankKey(metric_reader(entries, name, args.results), higher, args.decimals))
        names.append(name)
    ranking = []
    for ranked in rank_by(entries, keys):
        record: dict[str, Any] = {"rank": ranked.rank, "name": ranked.row.name}
        record.update(zip(names, ranked.scores))
        record["tied"] = ranked.tied
        ranking.append(record)
    metrics = {
        "metric": args.metric,
        "higher_is_better": not args.lower_is_better,
        "decimals": args.decimals,
        "then": [{"metric": n, "higher_is_better": k.higher_is_better} for n, k in zip(names[1:], keys[1:])],
        "ranking": ranking,
    }
    return EvalResult(metrics=metrics, per_example=[{"id": r["name"], **r} for r in ranking], warnings=warnings)


def _run_average(args: argparse.Namespace, entries: list[Entry], warnings: list[str]) -> EvalResult:
    specs = [parse_metric_spec(spec) for spec in args.average_rank]
    keys = [RankKey(metric_reader(entries, name, args.results), higher, args.decimals) for name, higher in specs]
    ranking = []
    for ranked in average_ranks(entries, keys, missing=args.missing):
        ranking.append({
            "rank": ranked.rank,
            "name": ranked.row.name,
            "average_rank": ranked.average_rank,
            "ranks": {name: r for (name, _), r in zip(specs, ranked.ranks)},
            "tied": ranked.tied,
        })
    metrics = {
        "average_rank": [{"metric": n, "higher_is_better": h} for n, h in specs],
        "decimals": args.decimals,
        "missing": args.missing,
        "ranking": ranking,
    }
    return EvalResult(metrics=metrics, per_example=[{"id": r["name"], **r} for r in ranking], warnings=warnings)
