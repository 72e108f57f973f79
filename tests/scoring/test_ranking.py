"""Ranking: competition ranks, tie tolerance, missing scores last, tie-breakers, average rank, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from scoring.ranking import RankKey, as_score, average_ranks, rank_by, rank_rows
from tests.scoring.helpers import run_cli_text_on_error as run_cli

Row = tuple[str, Any]


def ranks(ranked: list[Any]) -> list[tuple[str, int | None]]:
    return [(r.row[0], r.rank) for r in ranked]


def by_score(row: Row) -> Any:
    return row[1]


def test_it_gives_tied_rows_the_same_rank_and_skips_the_next() -> None:
    rows = [("a", 70.0), ("b", 90.0), ("c", 80.0), ("d", 80.0), ("e", 60.0)]
    assert ranks(rank_rows(rows, by_score)) == [("b", 1), ("c", 2), ("d", 2), ("a", 4), ("e", 5)]


def test_it_marks_tied_rows() -> None:
    ranked = rank_rows([("a", 1.0), ("b", 1.0), ("c", 0.5)], by_score)
    assert [r.tied for r in ranked] == [True, True, False]


def test_lower_is_better_reverses_the_order() -> None:
    rows = [("a", 3.0), ("b", 1.0), ("c", 2.0), ("d", 1.0)]
    assert ranks(rank_rows(rows, by_score, higher_is_better=False)) == [("b", 1), ("d", 1), ("c", 3), ("a", 4)]


def test_missing_scores_get_no_rank_and_come_last_in_input_order() -> None:
    rows = [("failed1", None), ("a", 50.0), ("nan", float("nan")), ("b", 60.0), ("failed2", None)]
    ranked = rank_rows(rows, by_score)
    assert ranks(ranked) == [("b", 1), ("a", 2), ("failed1", None), ("nan", None), ("failed2", None)]
    assert ranked[3].score is None  # NaN reads as missing
    assert not any(r.tied for r in ranked[2:])


def test_exact_comparison_is_the_default() -> None:
    rows = [("a", 80.124), ("b", 80.121)]
    assert ranks(rank_rows(rows, by_score)) == [("a", 1), ("b", 2)]


def test_scores_that_display_the_same_tie_with_decimals() -> None:
    rows = [("b", 80.121), ("a", 80.124), ("c", 80.126)]
    ranked = rank_rows(rows, by_score, decimals=2)
    # 80.12 == 80.12 < 80.13; inside the tie the unrounded value orders the display.
    assert ranks(ranked) == [("c", 1), ("a", 2), ("b", 2)]
    assert ranked[1].score == 80.124  # the raw score is kept


def test_decimals_round_the_binary_value_like_the_display() -> None:
    # 0.125 is exact in binary and rounds half to even: 0.12; 0.135 is stored as 0.13500000000000000888.
    assert f"{0.125:.2f}" == "0.12" and f"{0.135:.2f}" == "0.14"
    ranked = rank_rows([("x", 0.125), ("y", 0.12), ("z", 0.135), ("w", 0.14)], by_score, decimals=2)
    assert ranks(ranked) == [("w", 1), ("z", 1), ("x", 3), ("y", 3)]


def test_decimals_zero_and_negative_scores() -> None:
    ranked = rank_rows([("a", -0.4), ("b", 0.4), ("c", -1.6)], by_score, decimals=0)
    assert ranks(ranked) == [("b", 1), ("a", 1), ("c", 3)]  # -0.0 ties with 0.0


def test_a_tie_breaker_orders_tied_rows() -> None:
    rows = [("a", 80.0, 70.0), ("b", 80.0, 72.0), ("c", 81.0, 10.0), ("d", 80.0, 72.0)]
    ranked = rank_rows(rows, lambda r: r[1], then=[RankKey(lambda r: r[2])])
    assert ranks(ranked) == [("c", 1), ("b", 2), ("d", 2), ("a", 4)]
    assert ranked[1].scores == (80.0, 72.0)


def test_a_lower_is_better_tie_breaker() -> None:
    rows = [("a", 1.0, 5.0), ("b", 1.0, 3.0)]
    ranked = rank_rows(rows, lambda r: r[1], then=[RankKey(lambda r: r[2], higher_is_better=False)])
    assert ranks(ranked) == [("b", 1), ("a", 2)]


def test_a_missing_tie_breaker_loses_the_tie_but_keeps_a_rank() -> None:
    rows = [("a", 1.0, None), ("b", 1.0, 0.0), ("c", 0.5, 9.0)]
    ranked = rank_rows(rows, lambda r: r[1], then=[RankKey(lambda r: r[2])])
    assert ranks(ranked) == [("b", 1), ("a", 2), ("c", 3)]


def test_tie_breaker_with_its_own_decimals() -> None:
    rows = [("a", 1.0, 0.501), ("b", 1.0, 0.504)]
    ranked = rank_by(rows, [RankKey(lambda r: r[1]), RankKey(lambda r: r[2], decimals=2)])
    assert ranks(ranked) == [("b", 1), ("a", 1)]


def test_infinite_scores_rank_normally() -> None:
    ranked = rank_rows([("a", 1.0), ("b", math.inf), ("c", -math.inf)], by_score)
    assert ranks(ranked) == [("b", 1), ("a", 2), ("c", 3)]


def test_an_empty_list_ranks_to_nothing() -> None:
    assert rank_rows([], by_score) == []


def test_scores_must_be_numbers() -> None:
    assert as_score(3) == 3.0 and as_score(None) is None and as_score(float("nan")) is None
    with pytest.raises(TypeError):
        as_score("80.1")
    with pytest.raises(TypeError):
        as_score(True)
    with pytest.raises(ValueError):
        rank_by([("a", 1.0)], [])


# --- average rank ---


def metric(i: int, higher: bool = True) -> RankKey[Row]:
    return RankKey(lambda r: r[1][i], higher_is_better=higher)


def test_average_rank_over_metrics() -> None:
    rows: list[Row] = [("a", (90.0, 50.0)), ("b", (80.0, 70.0)), ("c", (70.0, 60.0))]
    ranked = average_ranks(rows, [metric(0), metric(1)])
    # a: 1 + 3, b: 2 + 1, c: 3 + 2
    assert [(r.row[0], r.rank, r.average_rank, r.ranks) for r in ranked] == [
        ("b", 1, 1.5, (2, 1)), ("a", 2, 2.0, (1, 3)), ("c", 3, 2.5, (3, 2))]


def test_equal_average_ranks_tie_exactly() -> None:
    rows: list[Row] = [("a", (3.0, 1.0, 2.0)), ("b", (2.0, 3.0, 1.0)), ("c", (1.0, 2.0, 3.0))]
    ranked = average_ranks(rows, [metric(0), metric(1), metric(2)])
    assert [(r.row[0], r.rank, r.tied) for r in ranked] == [("a", 1, True), ("b", 1, True), ("c", 1, True)]


def test_average_rank_missing_last_counts_after_the_scored_rows() -> None:
    rows: list[Row] = [("a", (90.0, None)), ("b", (80.0, 70.0)), ("c", (70.0, 60.0)), ("d", (None, None))]
    ranked = average_ranks(rows, [metric(0), metric(1)], missing="last")
    # metric 1 has two scored rows, so a missing score ranks 3 there.
    assert [(r.row[0], r.rank, r.average_rank, r.ranks) for r in ranked] == [
        ("b", 1, 1.5, (2, 1)), ("a", 2, 2.0, (1, None)), ("c", 3, 2.5, (3, 2)), ("d", None, None, (None, None))]


def test_average_rank_missing_unranked_drops_incomplete_rows() -> None:
    rows: list[Row] = [("a", (90.0, None)), ("b", (80.0, 70.0)), ("c", (70.0, 60.0))]
    ranked = average_ranks(rows, [metric(0), metric(1)], missing="unranked")
    assert [(r.row[0], r.rank) for r in ranked] == [("b", 1), ("c", 2), ("a", None)]


def test_average_rank_respects_direction_and_ties_inside_a_metric() -> None:
    rows: list[Row] = [("a", (1.0, 5.0)), ("b", (1.0, 4.0)), ("c", (0.0, 3.0))]
    ranked = average_ranks(rows, [metric(0), metric(1, higher=False)])
    # metric 0: a=1, b=1, c=3; metric 1 (lower better): c=1, b=2, a=3; a and c tie, input order
    assert [(r.row[0], r.rank, r.ranks) for r in ranked] == [("b", 1, (1, 2)), ("a", 2, (1, 3)), ("c", 2, (3, 1))]


def test_average_rank_checks_its_arguments() -> None:
    with pytest.raises(ValueError):
        average_ranks([("a", (1.0,))], [])
    with pytest.raises(ValueError):
        average_ranks([("a", (1.0,))], [metric(0)], missing="drop")  # type: ignore[arg-type]


# --- command line ---

RESULTS = [
    {"name": "A", "metrics": {"f1": 80.123, "em": 70.0, "SQuAD": {"f1": 90.0}}},
    {"name": "B", "metrics": {"f1": 80.121, "em": 71.0, "SQuAD": {"f1": 91.0}}},
    {"name": "failed", "metrics": {"f1": None, "em": None}},
    {"name": "D", "metrics": {"f1": 75.0, "em": 60.0, "SQuAD": {"f1": 92.0}}},
]


def write(tmp_path: Path, obj: Any, name: str = "results.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(obj), encoding="utf-8")
    return str(path)


def names_ranks(output: Any) -> list[tuple[str, int | None]]:
    return [(r["name"], r["rank"]) for r in output["ranking"]]


def test_cli_ranks_by_a_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["rank", write(tmp_path, RESULTS), "--metric", "f1"], capsys)
    assert code == 0 and err == ""
    assert names_ranks(out) == [("A", 1), ("B", 2), ("D", 3), ("failed", None)]
    assert out["ranking"][0] == {"rank": 1, "name": "A", "f1": 80.123, "tied": False}
    assert out["ranking"][3]["f1"] is None


def test_cli_decimals_and_a_tie_breaker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, RESULTS)
    code, out, _ = run_cli(["rank", path, "--metric", "f1", "--decimals", "2"], capsys)
    assert names_ranks(out) == [("A", 1), ("B", 1), ("D", 3), ("failed", None)]
    code, out, _ = run_cli(["rank", path, "--metric", "f1", "--decimals", "2", "--then", "em"], capsys)
    assert names_ranks(out) == [("B", 1), ("A", 2), ("D", 3), ("failed", None)]
    assert out["ranking"][0]["em"] == 71.0
    code, out, _ = run_cli(["rank", path, "--metric", "f1", "--decimals", "2", "--then", "em:lower"], capsys)
    assert names_ranks(out) == [("A", 1), ("B", 2), ("D", 3), ("failed", None)]


def test_cli_lower_is_better_and_dotted_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, RESULTS)
    _, out, _ = run_cli(["rank", path, "--metric", "SQuAD.f1", "--lower-is-better"], capsys)
    assert names_ranks(out) == [("A", 1), ("B", 2), ("D", 3), ("failed", None)]
    assert out["higher_is_better"] is False


def test_cli_average_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, RESULTS)
    code, out, _ = run_cli(["rank", path, "--average-rank", "f1", "SQuAD.f1", "em:lower"], capsys)
    assert code == 0
    assert names_ranks(out) == [("D", 1), ("A", 2), ("B", 3), ("failed", None)]
    assert out["ranking"][0]["ranks"] == {"f1": 3, "SQuAD.f1": 1, "em": 1}
    assert out["ranking"][0]["average_rank"] == pytest.approx(5 / 3, rel=1e-12)


def test_cli_accepts_flat_entries_and_writes_per_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, [{"name": "x", "f1": 1.0}, {"name": "y", "f1": 2.0}, {"name": "z"}])
    out_path = tmp_path / "ranked.json"
    code, out, _ = run_cli(["rank", path, "--metric", "f1", "--per-example", str(out_path)], capsys)
    assert code == 0
    assert names_ranks(out) == [("y", 1), ("x", 2), ("z", None)]
    assert json.loads(out_path.read_text())[0] == {"id": "y", "rank": 1, "name": "y", "f1": 2.0, "tied": False}


def test_cli_duplicate_names_warn_or_fail_in_strict_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, [{"name": "x", "f1": 1.0}, {"name": "x", "f1": 2.0}])
    code, out, err = run_cli(["rank", path, "--metric", "f1"], capsys)
    assert code == 0 and "'x' appears more than once" in err
    code, _, err = run_cli(["rank", path, "--metric", "f1", "--strict"], capsys)
    assert code == 1 and "id 'x'" in err and "more than once" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[{\"name\": \"a\", ", "invalid JSON"),
        (b"\xff\xfe", "not valid UTF-8"),
        (b"{\"a\": 1}", "expected a JSON list of entries"),
        (b"[3]", "entry 1 should be an object"),
        (b"[{\"f1\": 1}]", "entry 1 needs a string field 'name'"),
        (b"[{\"name\": 5, \"f1\": 1}]", "needs a string field 'name', found an integer"),
        (b"[{\"name\": \"a\", \"metrics\": [1]}]", "'metrics' (entry 1) should be an object"),
        (b"[{\"name\": \"a\", \"f1\": \"80\"}]", "metric 'f1' should be a number or null, found a string"),
        (b"[{\"name\": \"a\", \"f1\": true}]", "found a boolean"),
        (b"[{\"name\": \"a\", \"em\": 1}]", "metric 'f1' is in no entry (available: em)"),
    ],
)
def test_cli_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         content: bytes, expected: str) -> None:
    path = tmp_path / "results.json"
    path.write_bytes(content)
    code, out, err = run_cli(["rank", str(path), "--metric", "f1"], capsys)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and str(path) in err
    assert expected in err
    assert "Traceback" not in err


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["rank", str(tmp_path / "nope.json"), "--metric", "f1"], capsys)
    assert code == 1 and "file not found" in err


def test_cli_needs_a_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["rank", write(tmp_path, RESULTS)])
    assert exc.value.code == 2
    capsys.readouterr()
