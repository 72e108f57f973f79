"""QuAC scorer.py (spec 6): golden cases, the real excerpt, a plain reference, quirks and bad inputs."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scoring import quac
from scoring.errors import InputFormatError, UndefinedMetricError
from scoring.result import MAX_LISTED_WARNINGS
from scoring.text import TokenBag, answer_tokens, answer_tokens_many, f1_v1, normalize_answer
from tests.builders.shared import shared_path
from tests.scoring.helpers import assert_one_line_error, parametrize_golden, run_cli

REL = 1e-9
CANNOT = "CANNOTANSWER"


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    return bool(a == b)


def _cli(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, Any, str]:
    return run_cli(capsys, "quac", *args)


# --------------------------------------------------------------------------- a plain reference
# scorer.py's eval_fn restated as directly as possible on top of the plain
# text functions, so the fast paths (batch normalisation, multisets, each pair
# once, top/second leave-one-out) are checked against it on random inputs.


def _ref_handle_cannot(refs: list[str]) -> list[str]:
    cannot = sum(r == CANNOT for r in refs)
    return [CANNOT] if cannot >= len(refs) - cannot else [r for r in refs if r != CANNOT]


def _ref_overlap(pred: str, gold: str, context: str) -> tuple[str, float]:
    if gold == CANNOT:
        return ("Exact match", 1.0) if pred == CANNOT else ("No overlap", 0.0)
    f1 = f1_v1(pred, gold)
    ps, gs = context.find(pred), context.find(gold)
    if ps == -1 or gs == -1:
        return "Span indexing error", f1
    if normalize_answer(pred) == normalize_answer(gold):
        return "Exact match", f1
    if max(ps, gs) <= min(ps + len(pred), gs + len(gold)):
        return "Partial overlap", f1
    return "No overlap", f1


def _ref_best(pred: str, refs: list[str], context: str) -> tuple[str, float]:
    return max((_ref_overlap(pred, r, context) for r in refs), key=lambda x: x[1])


def _ref_model_f1(pred: str, refs: list[str], context: str) -> float:
    if len(refs) == 1:
        return _ref_best(pred, refs, context)[1]
    outs = [_ref_best(pred, refs[:i] + refs[i + 1:], context)[1] for i in range(len(refs))]
    return 1.0 * sum(outs) / len(outs)


def _ref_human_f1(refs: list[str]) -> float:
    if len(refs) == 1:
        return 1.0
    total = 0.0
    for i in range(len(refs)):
        total += max(f1_v1(refs[i], refs[j]) for j in range(len(refs)) if j != i)
    return total / len(refs)


def _ref_eval(
    data: dict[str, Any], lines: list[dict[str, Any]], min_f1: float = 0.4
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    preds: dict[str, dict[str, tuple[str, Any, Any]]] = {}
    for line in lines:
        did = line["qid"][0].split("_q#")[0]
        for q, s, y, f in zip(line["qid"], line["best_span_str"], line["yesno"], line["followup"]):
            preds.setdefault(did, {})[q] = (s, y, f)
    f1_stats: dict[str, list[float]] = {}
    unfiltered: list[float] = []
    yes_nos: list[bool] = []
    followups: list[bool] = []
    unans: list[float] = []
    heq = dheq = total_qs = dials = 0.0
    records = []
    for article in data["data"]:
        for par in article["paragraphs"]:
            did, good = par["id"], 1.0
            for qa in par["qas"]:
                refs = _ref_handle_cannot([a["text"] for a in qa["answers"]])
                hf1 = _ref_human_f1(refs)
                if qa["id"] not in preds.get(did, {}):
                    good = 0.0
                    f1_stats.setdefault("NO ANSWER", []).append(0.0)
                    yes_nos.append(False)
                    followups.append(False)
                    if refs == [CANNOT]:
                        unans.append(0.0)
                    total_qs += 1
                    unfiltered.append(0.0)
                    records.append({"id": qa["id"], "model_f1": 0.0, "category": "NO ANSWER", "missing": True})
                    continue
                span, yesno, followup = preds[did][qa["id"]]
                category = _ref_best(span, refs, par["context"])[0]
                f1 = _ref_model_f1(span, refs, par["context"])
                unfiltered.append(f1)
                records.append({"id": qa["id"], "human_f1": hf1, "model_f1": f1, "category": category,
                                "refs_after_handle_cannot": refs, "filtered": hf1 < min_f1, "missing": False})
                if hf1 < min_f1:
                    continue
                yes_nos.append(yesno == qa["yesno"])
                followups.append(followup == qa["followup"])
                if refs == [CANNOT]:
                    unans.append(f1)
                if f1 >= hf1:
                    heq += 1
                else:
                    good = 0.0
                f1_stats.setdefault(category, []).append(f1)
                total_qs += 1
            dheq += good
            dials += 1
    all_f1 = [x for v in f1_stats.values() for x in v]

    def pct(xs: list[Any]) -> float | None:
        return 100.0 * sum(xs) / len(xs) if xs else None

    metrics = {"unfiltered_f1": pct(unfiltered), "f1": pct(all_f1),
               "HEQ": 100.0 * heq / total_qs if total_qs else None, "DHEQ": 100.0 * dheq / dials,
               "yes/no": pct(yes_nos), "followup": pct(followups), "unanswerable_acc": pct(unans)}
    return metrics, records


def _evaluate(data: dict[str, Any], lines: list[dict[str, Any]], **kwargs: Any) -> Any:
    return quac.evaluate_quac(data, lines, **kwargs)  # the loaded JSON, as the platform may pass it


# --------------------------------------------------------------------------- golden cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_golden(metafunc, "golden_case", "quac")


def _golden_args(case: Path) -> list[str]:
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    args = spec["official_arguments"][1:]  # drop "scorer.py"
    return [str(case / a) if (case / a).is_file() else a for a in args]


def test_golden_case(golden_case: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    per_example = tmp_path / "per_example.json"
    code, out, err = _cli(capsys, *_golden_args(golden_case), "--per-example", per_example)
    if (golden_case / "expected_error.json").exists():
        assert code == 1 and out is None
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err
        assert "unanswerable_acc is undefined" in lines[0] and "CANNOTANSWER" in lines[0]
        # The documented alternative: the metric as null, every other number computed.
        code, out, err = _cli(capsys, *_golden_args(golden_case), "--undefined-as-null", "--per-example",
                              per_example)
        assert code == 0 and out["unanswerable_acc"] is None and list(out) == list(quac.METRIC_KEYS)
        assert "unanswerable_acc is reported as null" in err
    else:
        expected = json.loads((golden_case / "expected.json").read_text(encoding="utf-8"))
        assert code == 0, err
        assert list(out) == list(expected)
        for key, value in expected.items():
            assert _close(out[key], value), key
    expected_records = json.loads((golden_case / "expected_per_example.json").read_text(encoding="utf-8"))
    records = json.loads(per_example.read_text(encoding="utf-8"))
    assert len(records) == len(expected_records)
    for ours, theirs in zip(records, expected_records):
        for key, value in theirs.items():
            assert _close(ours[key], value), (theirs["id"], key, ours[key], value)
        assert ours["missing"] is False


def test_golden_case_via_python_api(golden_case: Path) -> None:
    """The platform's path: loaders plus evaluate_quac, same numbers as the command."""
    args = json.loads((golden_case / "case.json").read_text(encoding="utf-8"))["official_arguments"]
    min_f1 = float(args[args.index("--min_f1") + 1]) if "--min_f1" in args else quac.DEFAULT_MIN_F1
    dialogs = quac.load_quac_dataset(golden_case / "dataset.json")
    preds = quac.load_quac_predictions(golden_case / "pred.jsonl")
    if (golden_case / "expected_error.json").exists():
        with pytest.raises(UndefinedMetricError):
            quac.evaluate_quac(dialogs, preds, min_f1=min_f1)
        return
    result = quac.evaluate_quac(dialogs, preds, min_f1=min_f1)
    expected = json.loads((golden_case / "expected.json").read_text(encoding="utf-8"))
    assert all(_close(result.metrics[k], v) for k, v in expected.items())


# --------------------------------------------------------------------------- the real excerpt


def _excerpt() -> dict[str, Any]:
    path = shared_path("data", "quac-excerpt", "val_v0.2.json")
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _gold_lines(data: dict[str, Any]) -> list[dict[str, Any]]:
    lines = []
    for article in data["data"]:
        for par in article["paragraphs"]:
            qas = par["qas"]
            lines.append({"qid": [q["id"] for q in qas], "best_span_str": [q["orig_answer"]["text"] for q in qas],
                          "yesno": [q["yesno"] for q in qas], "followup": [q["followup"] for q in qas]})
    return lines


def test_excerpt_with_the_original_answers_as_predictions_scores_sensibly() -> None:
    data = _excerpt()
    lines = _gold_lines(data)
    result = _evaluate(data, lines)
    m = result.metrics
    assert m["yes/no"] == 100.0 and m["followup"] == 100.0
    # The original answer is one of the references, so the model agrees with
    # the annotators at least as well as they agree with each other, mostly.
    assert 60.0 < m["f1"] <= 100.0 and m["HEQ"] > 80.0 and m["unfiltered_f1"] > 50.0
    expected, records = _ref_eval(data, lines)
    for key, value in expected.items():
        assert _close(m[key], value), key
    assert not any(r["missing"] for r in result.per_example)
    for ours, ref in zip(result.per_example, records):
        assert ours["id"] == ref["id"] and ours["category"] == ref["category"]
        assert _close(ours["model_f1"], ref["model_f1"]) and _close(ours["human_f1"], ref["human_f1"])


def test_excerpt_with_cannotanswer_everywhere_scores_only_unanswerable_questions() -> None:
    data = _excerpt()
    lines = _gold_lines(data)
    for line in lines:
        line["best_span_str"] = [CANNOT] * len(line["qid"])
    result = _evaluate(data, lines)
    expected, _ = _ref_eval(data, lines)
    assert result.metrics["unanswerable_acc"] == 100.0
    for key, value in expected.items():
        assert _close(result.metrics[key], value), key


# --------------------------------------------------------------------------- random inputs vs the reference


WORDS = ["the", "a", "an", "ship", "sea", "ice", "Gdansk", "eleven", "days", "crew", "fish", "coffee,",
         "“tinned”", "été", "—the", "An", "sea.", "ICE"]


def _random_case(rng: random.Random) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    paragraphs = []
    lines = []
    for d in range(rng.randint(1, 4)):
        context_words = [rng.choice(WORDS) for _ in range(40)]
        context = " ".join(context_words)
        did = f"C_{d}_{rng.randint(0, 9)}"
        qas = []
        line: dict[str, list[Any]] = {"qid": [], "best_span_str": [], "yesno": [], "followup": []}
        for q in range(rng.randint(1, 6)):
            refs = []
            for _ in range(rng.choice([1, 2, 3, 4, 4, 4])):
                if rng.random() < 0.3:
                    refs.append(CANNOT)
                elif rng.random() < 0.8:
                    start = rng.randint(0, 35)
                    refs.append(" ".join(context_words[start:start + rng.randint(1, 5)]))
                else:
                    refs.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 3))))
            qid = f"{did}_q#{q}"
            qas.append({"id": qid, "yesno": rng.choice("xyn"), "followup": rng.choice("ymn"),
                        "answers": [{"text": r, "answer_start": 0} for r in refs]})
            if rng.random() < 0.15:
                continue  # missing prediction
            roll = rng.random()
            span = CANNOT if roll < 0.2 else rng.choice(refs) if roll < 0.5 else " ".join(
                context_words[(s := rng.randint(0, 35)):s + rng.randint(0, 6)])
            line["qid"].append(qid)
            line["best_span_str"].append(span)
            line["yesno"].append(rng.choice("xyn"))
            line["followup"].append(rng.choice("ymn"))
        paragraphs.append({"id": did, "context": context, "qas": qas})
        if line["qid"]:
            lines.append(line)
    return {"data": [{"paragraphs": paragraphs}]}, lines


@pytest.mark.parametrize("seed", range(60))
def test_random_inputs_match_the_plain_reference(seed: int) -> None:
    rng = random.Random(seed)
    data, lines = _random_case(rng)
    min_f1 = rng.choice([0.0, 0.4, 0.4, 0.7, 1.0])
    expected, records = _ref_eval(data, lines, min_f1)
    result = _evaluate(data, lines, min_f1=min_f1, allow_undefined=True)
    for key, value in expected.items():
        assert (result.metrics[key] is None) if value is None else _close(result.metrics[key], value), key
    assert len(result.per_example) == len(records)
    for ours, ref in zip(result.per_example, records):
        for key, value in ref.items():
            assert _close(ours[key], value), (seed, ref["id"], key, ours[key], value)


def test_batch_normalisation_and_multisets_equal_the_plain_functions() -> None:
    rng = random.Random(5)
    alphabet = list("aAtThHeEnN .,'-_ΣσςΟΔ—“”İ\u00a0\t\u0307é1²") + ["the ", " an ", "a "]
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(3000)]
    texts += ["ΟΔΟΣ", "x\x00the", ""]
    assert answer_tokens_many(texts) == [answer_tokens(t) for t in texts]
    assert answer_tokens_many(texts[:-3]) == [answer_tokens(t) for t in texts[:-3]]  # the NUL-free batch path
    bags = TokenBag.many(texts[:400])
    for i in range(0, 400, 2):
        a, b = bags[i], bags[i + 1]
        same = sum((Counter(a.tokens) & Counter(b.tokens)).values())
        assert a.overlap(b) == same == b.overlap(a)
        assert a.f1_v1(b) == f1_v1(texts[i], texts[i + 1]) == b.f1_v1(a)


# --------------------------------------------------------------------------- the quirks, one by one


def _dataset(*dialogs: tuple[str, str, list[tuple[str, list[str]]]]) -> dict[str, Any]:
    paragraphs = []
    for did, context, questions in dialogs:
        qas = [{"id": qid, "yesno": "x", "followup": "y", "answers": [{"text": r, "answer_start": 0} for r in refs]}
               for qid, refs in questions]
        paragraphs.append({"id": did, "context": context, "qas": qas})
    return {"data": [{"paragraphs": paragraphs}]}


def _line(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"qid": [q for q, _ in pairs], "best_span_str": [s for _, s in pairs],
            "yesno": ["x"] * len(pairs), "followup": ["y"] * len(pairs)}


def test_handle_cannot_gives_ties_and_empty_reference_lists_to_cannotanswer() -> None:
    assert quac.handle_cannot([CANNOT, "x"]) == [CANNOT]
    assert quac.handle_cannot([]) == [CANNOT]
    assert quac.handle_cannot([CANNOT, "x", "y"]) == ["x", "y"]
    assert quac.handle_cannot(["cannotanswer", "x"]) == ["cannotanswer", "x"]


def test_predictions_are_filed_under_the_first_qids_dialog() -> None:
    data = _dataset(("D_a", "one two three", [("D_a_q#0", ["one two"])]),
                    ("D_b", "four five six", [("D_b_q#0", ["five six"])]))
    warnings: list[str] = []
    preds = quac.quac_predictions(enumerate([_line(("D_a_q#0", "one two"), ("D_b_q#0", "five six"))], start=1),
                                  warn=warnings.append)
    result = quac.evaluate_quac(data, preds, allow_undefined=True)
    assert [r["missing"] for r in result.per_example] == [False, True]
    assert result.metrics["f1"] == pytest.approx(50.0, rel=REL)
    assert any("'D_b_q#0' (line 1)" in w and "count as missing" in w for w in warnings)


def test_a_later_prediction_replaces_an_earlier_one_and_strict_refuses_it() -> None:
    data = _dataset(("D_a", "one two three", [("D_a_q#0", ["one two"])]))
    lines = [_line(("D_a_q#0", "three")), _line(("D_a_q#0", "one two"))]
    warnings: list[str] = []
    preds = quac.quac_predictions(enumerate(lines, start=1), warn=warnings.append)
    result = quac.evaluate_quac(data, preds, allow_undefined=True)
    assert result.metrics["f1"] == 100.0
    assert any("predicted more than once" in w for w in warnings)
    with pytest.raises(InputFormatError, match="line 2.*already predicted"):
        quac.quac_predictions(enumerate(lines, start=1), path="pred.jsonl", strict=True)


def test_missing_predictions_count_even_when_the_question_is_filtered_out() -> None:
    # q#0: two references that share nothing -> human F1 0 < 0.4, filtered out;
    # q#1: CANNOTANSWER, answered.
    data = _dataset(("D_a", "alpha beta gamma", [("D_a_q#0", ["alpha", "gamma"]), ("D_a_q#1", [CANNOT])]))
    answered = quac.evaluate_quac(data, quac.quac_predictions(enumerate(
        [_line(("D_a_q#0", "alpha"), ("D_a_q#1", CANNOT))], start=1)))
    assert answered.metrics["f1"] == 100.0 and answered.metrics["DHEQ"] == 100.0
    assert answered.per_example[0]["filtered"] is True
    missing = quac.evaluate_quac(data, quac.quac_predictions(enumerate([_line(("D_a_q#1", CANNOT))], start=1)))
    assert missing.metrics["f1"] == 50.0 and missing.metrics["HEQ"] == 50.0
    assert missing.metrics["yes/no"] == 50.0 and missing.metrics["DHEQ"] == 0.0
    assert missing.per_example[0]["missing"] is True and missing.per_example[0]["filtered"] is False
    assert missing.warnings and "D_a_q#0" in missing.warnings[0]


def test_a_dialog_whose_questions_are_all_filtered_out_still_counts_as_good() -> None:
    data = _dataset(("D_a", "alpha beta gamma", [("D_a_q#0", ["alpha", "gamma"])]),
                    ("D_b", "delta", [("D_b_q#0", [CANNOT])]))
    lines = [_line(("D_a_q#0", "beta")), _line(("D_b_q#0", "delta"))]
    result = _evaluate(data, lines)
    assert result.metrics["DHEQ"] == 50.0  # D_a good (nothing evaluated), D_b failed
    assert result.metrics["unanswerable_acc"] == 0.0


def test_category_needs_the_context_but_never_changes_the_numbers() -> None:
    data = _dataset(("D_a", "The Ship sailed to Gdansk in 1979.",
                     [("D_a_q#0", ["The Ship sailed"]), ("D_a_q#1", ["to Gdansk"]),
                      ("D_a_q#2", ["Gdansk in 1979"]), ("D_a_q#3", ["The Ship"])]))
    lines = [_line(("D_a_q#0", "the ship sailed!"), ("D_a_q#1", "sailed to"), ("D_a_q#2", "The Ship"),
                   ("D_a_q#3", "The Ship"))]
    result = _evaluate(data, lines, allow_undefined=True)
    assert [r["category"] for r in result.per_example] == [
        "Span indexing error", "Partial overlap", "No overlap", "Exact match"]
    assert result.per_example[0]["model_f1"] == 1.0


def test_every_question_filtered_out_is_an_undefined_f1_not_a_crash() -> None:
    data = _dataset(("D_a", "alpha beta gamma", [("D_a_q#0", ["alpha", "gamma"])]))
    with pytest.raises(UndefinedMetricError, match=r"f1, HEQ, yes/no, followup and unanswerable_acc are undefined"):
        _evaluate(data, [_line(("D_a_q#0", "alpha"))])
    result = _evaluate(data, [_line(("D_a_q#0", "alpha"))], allow_undefined=True)
    assert result.metrics["f1"] is None and result.metrics["unfiltered_f1"] == 50.0
    assert result.metrics["DHEQ"] == 100.0


def test_unanswerable_questions_all_filtered_are_named_in_the_error() -> None:
    # A CANNOTANSWER question has human F1 1.0, so only a filter above 1 drops it;
    # the missing q#0 still counts (spec 6.4), so f1 is defined and only
    # unanswerable_acc is not.
    data = _dataset(("D_a", "alpha beta", [("D_a_q#0", ["alpha"]), ("D_a_q#1", [CANNOT])]))
    with pytest.raises(UndefinedMetricError, match=r"^dataset: unanswerable_acc is undefined: no question with a "
                                                   r"CANNOTANSWER majority reference is left after the min_f1=1.5 "
                                                   r"filter"):
        _evaluate(data, [_line(("D_a_q#1", CANNOT))], min_f1=1.5)
    result = _evaluate(data, [_line(("D_a_q#1", CANNOT))], min_f1=1.5, allow_undefined=True)
    assert result.metrics["f1"] == 0.0 and result.metrics["unanswerable_acc"] is None
    missing = _evaluate(data, [_line(("D_a_q#0", "alpha"))], min_f1=1.5)
    assert missing.metrics["unanswerable_acc"] == 0.0


# --------------------------------------------------------------------------- the command line


def _write(tmp_path: Path, data: dict[str, Any], lines: list[dict[str, Any]]) -> tuple[Path, Path]:
    val = tmp_path / "val.json"
    val.write_text(json.dumps(data), encoding="utf-8")
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return val, pred


def _small(tmp_path: Path) -> tuple[Path, Path]:
    data = _dataset(("D_a", "alpha beta gamma", [("D_a_q#0", ["alpha beta", "alpha"]), ("D_a_q#1", [CANNOT])]))
    return _write(tmp_path, data, [_line(("D_a_q#0", "alpha"), ("D_a_q#1", CANNOT))])


def test_cli_writes_the_official_output_file_and_accepts_the_official_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    val, pred = _small(tmp_path)
    out_file = tmp_path / "eval.json"
    code, out, _ = _cli(capsys, "--val_file", val, "--model_output", pred, "--o", out_file, "--verbose",
                        "--min_f1", "0.4")
    assert code == 0
    assert json.loads(out_file.read_text(encoding="utf-8")) == out
    assert list(out) == list(quac.METRIC_KEYS)
    code, rounded, _ = _cli(capsys, "--val_file", val, "--model_output", pred, "--official-rounding")
    assert code == 0 and rounded == out  # the official JSON is not rounded


def test_cli_per_example_file_has_ids_scores_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    val, pred = _small(tmp_path)
    per_example = tmp_path / "pe.json"
    code, _, _ = _cli(capsys, "--val_file", val, "--model_output", pred, "--per-example", per_example)
    assert code == 0
    records = json.loads(per_example.read_text(encoding="utf-8"))
    assert [r["id"] for r in records] == ["D_a_q#0", "D_a_q#1"]
    assert set(records[0]) == {"id", "dialog_id", "refs_after_handle_cannot", "human_f1", "category", "model_f1",
                               "yesno_correct", "followup_correct", "missing", "filtered"}
    assert records[1]["refs_after_handle_cannot"] == [CANNOT] and records[1]["model_f1"] == 1.0


def _assert_one_line_error(capsys: pytest.CaptureFixture[str], args: list[Any], *needles: str) -> None:
    assert_one_line_error(capsys, ["quac", *args], *needles)


def test_bad_prediction_lines_are_named_by_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    val, pred = _small(tmp_path)
    cases: list[tuple[bytes, tuple[str, ...]]] = [
        (b'{"qid": ["D_a_q#0"], "best_span_str": ["x"], "yesno": ["x"], "followup": ["y"]}\n{"qid": [\n',
         ("line 2", "invalid JSON")),
        (b'\n\n{"qid": ["D_a_q#0"], "best_span_str": ["x"], "yesno": ["x"]}\n', ("line 3", "'followup'")),
        (b'{"qid": ["D_a_q#0"], "best_span_str": [3], "yesno": ["x"], "followup": ["y"]}\n',
         ("line 1", "best_span_str", "string")),
        (b'{"qid": [], "best_span_str": [], "yesno": [], "followup": []}\n', ("line 1", "empty")),
        (b'{"qid": "D_a_q#0", "best_span_str": ["x"], "yesno": ["x"], "followup": ["y"]}\n',
         ("line 1", "'qid'", "list")),
        (b'["D_a_q#0"]\n', ("line 1", "JSON object")),
        (b'{"qid": ["D_a_q#0"], "best_span_str": ["caf\xe9"], "yesno": ["x"], "followup": ["y"]}\n',
         ("line 1", "UTF-8")),
    ]
    for content, needles in cases:
        pred.write_bytes(content)
        _assert_one_line_error(capsys, ["--val_file", val, "--model_output", pred], str(pred), *needles)


def test_bad_datasets_are_named_by_position_and_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    val, pred = _small(tmp_path)
    good = json.loads(val.read_text(encoding="utf-8"))
    qa = good["data"][0]["paragraphs"][0]["qas"][0]
    broken: list[tuple[Any, tuple[str, ...]]] = [
        ({"data": []}, ("no questions",)),
        ({"version": 1}, ("'data' list",)),
        ({"data": [{"paragraphs": [{"id": "D_a", "qas": []}]}]}, ("'context'",)),
        ({"data": [{"paragraphs": [{"id": "D_a", "context": "c", "qas": [{**qa, "answers": [{"text": 5}]}]}]}]},
         ("D_a_q#0", "'answers'", "string 'text'")),
        ({"data": [{"paragraphs": [{"id": "D_a", "context": "c",
                                    "qas": [{k: v for k, v in qa.items() if k != "yesno"}]}]}]},
         ("D_a_q#0", "'yesno'")),
    ]
    for data, needles in broken:
        val.write_text(json.dumps(data), encoding="utf-8")
        _assert_one_line_error(capsys, ["--val_file", val, "--model_output", pred], str(val), *needles)
    val.write_text("{\n  \"data\": [\n  ,]}", encoding="utf-8")
    _assert_one_line_error(capsys, ["--val_file", val, "--model_output", pred], "line 3", "invalid JSON")


def test_strict_mode_rejects_lists_of_different_lengths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    val, pred = _small(tmp_path)
    pred.write_text(json.dumps({"qid": ["D_a_q#0", "D_a_q#1"], "best_span_str": ["alpha"], "yesno": ["x", "x"],
                                "followup": ["y", "y"]}) + "\n", encoding="utf-8")
    code, out, err = _cli(capsys, "--val_file", val, "--model_output", pred)
    assert code == 0 and "different lengths" in err and "D_a_q#1" in err  # cut short, as zip() does: q#1 missing
    _assert_one_line_error(capsys, ["--val_file", val, "--model_output", pred, "--strict"], "line 1",
                           "different lengths")


def test_a_repeated_question_id_is_scored_twice_unless_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _dataset(("D_a", "alpha beta", [("D_a_q#0", ["alpha"]), ("D_a_q#0", ["beta"]), ("D_a_q#1", [CANNOT])]))
    val, pred = _write(tmp_path, data, [_line(("D_a_q#0", "alpha"), ("D_a_q#1", CANNOT))])
    code, out, _ = _cli(capsys, "--val_file", val, "--model_output", pred)
    assert code == 0 and out["unfiltered_f1"] == pytest.approx(200 / 3, rel=REL)
    _assert_one_line_error(capsys, ["--val_file", val, "--model_output", pred, "--strict"], "'D_a_q#0'",
                           "more than once")


def test_many_missing_predictions_are_summarised(tmp_path: Path) -> None:
    questions = [(f"D_a_q#{i}", ["alpha"]) for i in range(30)] + [("D_a_q#30", [CANNOT])]
    data = _dataset(("D_a", "alpha", questions))
    result = _evaluate(data, [_line(("D_a_q#30", CANNOT))])
    assert len(result.warnings) == MAX_LISTED_WARNINGS + 1
    assert result.warnings[-1].startswith("... and 10 more")
    assert result.metrics["f1"] == pytest.approx(100 / 31, rel=REL)
