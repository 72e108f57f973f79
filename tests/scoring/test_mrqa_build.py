"""MRQA-format building (MRQA 2019 overview, section 3): the official SQuAD dev file reproduced, the
800-token cut, separators, spans, other sources, and the dev/test partition by context."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from scoring.cli import main
from scoring.errors import InputFormatError
from scoring.mrqa import load_mrqa_gold
from scoring.mrqa_build import (
    MrqaFile,
    _legacy_set_order,
    build_mrqa,
    compare_mrqa,
    join_documents,
    partition_records,
    read_mrqa_file,
)
from scoring.mrqa_tokens import tokenize
from tests.builders.shared import shared_path
from tests.scoring.helpers import assert_one_line_error, run_cli

# --------------------------------------------------------------------------- helpers


def _write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def _lines(path: Path) -> list[Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _squad(*paragraphs: tuple[str, list[dict[str, Any]]], title: str = "Terns", version: str = "1.1") -> dict[str, Any]:
    return {"version": version, "data": [{"title": title, "paragraphs": [
        {"context": context, "qas": qas} for context, qas in paragraphs]}]}


def _cli_quiet(*args: Any) -> tuple[int, Any, str]:
    """``python -m scoring ARGS`` in-process without capsys (module fixtures cannot have it)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main([str(a) for a in args])
    return code, json.loads(stdout.getvalue()) if stdout.getvalue().strip() else None, stderr.getvalue()


def _qa(qid: str, *answers: tuple[str, int], impossible: bool = False) -> dict[str, Any]:
    qa: dict[str, Any] = {"id": qid, "question": f"Question {qid}?",
                          "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    if impossible:
        qa["is_impossible"] = True
    return qa


# --------------------------------------------------------------------------- the official SQuAD dev file


@pytest.fixture(scope="module")
def built_squad_dev(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], MrqaFile]:
    """SQuAD v1.1 dev built once through the command line (about 5 s): the file, its printed counts, its records."""
    source = shared_path("data", "squad-v1.1", "dev-v1.1.json")
    out = tmp_path_factory.mktemp("mrqa") / "SQuAD.jsonl.gz"
    code, counts, _ = _cli_quiet("mrqa-build", source, out)
    assert code == 0
    return out, counts, read_mrqa_file(str(out))


@pytest.mark.shared
@pytest.mark.slow
def test_the_builder_reproduces_the_official_squad_dev_file(built_squad_dev: tuple[Path, dict[str, Any], MrqaFile]) -> None:
    _, counts, ours = built_squad_dev
    official = read_mrqa_file(str(shared_path("data", "mrqa-squad-dev", "SQuAD.jsonl.gz")))
    comparison = compare_mrqa(ours, official)
    # Same 10,507 questions of 10,570: both drop the same 63 (no answer on token boundaries).
    assert counts["questions"] == {"read": 10570, "written": 10507, "unanswerable_dropped": 0,
                                   "no_answer_on_token_boundaries_dropped": 63, "answer_outside_cut_dropped": 0}
    assert comparison["questions"] == {"ours": 10507, "reference": 10507, "both": 10507,
                                       "only_ours": 0, "only_reference": 0}
    # Answers, detected answers (char and token spans, span order included) and question tokens: all equal.
    assert comparison["answers_equal"] == 10507
    assert comparison["detected_char_spans_equal"] == 10507
    assert comparison["detected_answers_equal"] == 10507
    assert comparison["question_tokens_equal"] == 10507
    # Token agreement: every context's tokens equal the official ones (2,067 of 2,067 = 100%).
    assert comparison["contexts"] == {"ours": 2067, "reference": 2067, "both": 2067, "tokens_equal": 2067}
    assert counts["contexts"]["cut_to_max_tokens"] == 0  # the longest official context has 706 tokens
    assert counts["answers"] == {"searched_for": 753, "not_detected": 439, "not_extractive_left_out": 0}


@pytest.mark.shared
@pytest.mark.slow
def test_built_lines_equal_the_official_lines_but_for_the_random_qids(
    built_squad_dev: tuple[Path, dict[str, Any], MrqaFile]
) -> None:
    out, _, _ = built_squad_dev
    ours = gzip.decompress(out.read_bytes()).decode("utf-8").splitlines()
    official = gzip.decompress(shared_path("data", "mrqa-squad-dev", "SQuAD.jsonl.gz").read_bytes()).decode("utf-8")
    theirs = official.splitlines()
    assert ours[0] == theirs[0] == '{"header": {"dataset": "SQuAD", "split": "dev"}}'
    # MRQA's qids are random uuid4 hex; the context order was shuffled upstream (parallel workers).
    by_context = {json.loads(line)["context"]: json.loads(line) for line in ours[1:]}
    identical = 0
    for line in theirs[1:]:
        record = json.loads(line)
        mine = by_context[record["context"]]
        for qa_mine, qa_theirs in zip(mine["qas"], record["qas"]):
            assert len(qa_mine["qid"]) == len(qa_theirs["qid"]) == 32
            qa_mine["qid"] = qa_theirs["qid"]
        identical += json.dumps(mine) == line
    assert identical == 2067


@pytest.mark.shared
@pytest.mark.slow
def test_searched_answers_have_several_spans_in_the_official_order(
    built_squad_dev: tuple[Path, dict[str, Any], MrqaFile]
) -> None:
    records = built_squad_dev[2].records
    detected = [d for r in records for qa in r["qas"] for d in qa["detected_answers"]]
    assert len(detected) == 34287
    several = [d for d in detected if len(d["char_spans"]) > 1]
    assert len(several) == 225
    # Equal answers are not merged: three annotators' "Super Bowl" (answer_start 0) give three
    # entries, each with all five occurrences, in MRQA's (Python 3.7 set) order.
    first = next(qa for r in records for qa in r["qas"] if qa["id"] == "56d9895ddc89441400fdb50e")
    assert [list(d) for d in first["detected_answers"]] == [["text", "token_spans", "char_spans"]] * 3
    assert first["detected_answers"][0]["token_spans"] == [[0, 1], [86, 87], [51, 52], [114, 115], [131, 132]]
    # The search skips tokens that normalise to nothing, so 384 spans' text is not their answer's.
    mismatched = sum(r["context"][a:b + 1] != d["text"]
                     for r in records for qa in r["qas"] for d in qa["detected_answers"] for a, b in d["char_spans"])
    assert mismatched == 384


@pytest.mark.shared
@pytest.mark.slow
def test_the_tokenizer_matches_the_official_tokens_of_every_context_and_question() -> None:
    official = _lines(shared_path("data", "mrqa-squad-dev", "SQuAD.jsonl.gz"))[1:]
    contexts = sum([list(t) for t in tokenize(r["context"])] == r["context_tokens"] for r in official)
    questions = [qa for r in official for qa in r["qas"]]
    same = sum([list(t) for t in tokenize(qa["question"], keep_space=True)] == qa["question_tokens"]
               for qa in questions)
    assert (contexts, same) == (2067, 10507)


# --------------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize(("text", "tokens"), [
    ("Gano's 39-yard goal", ["Gano", "'s", "39-yard", "goal"]),
    ("gold-themed and/or HIV/AIDS", ["gold", "-", "themed", "and/or", "HIV", "/", "AIDS"]),
    ("Sekulić.:32 [citation needed].", ["Sekulić.:32", "[", "citation", "needed]."]),
    ("they don't, cannot", ["they", "do", "n't", ",", "can", "not"]),
    ("Tiffany & Co. at 3:00 a.m.", ["Tiffany", "&", "Co.", "at", "3:00", "a.m."]),
    ("the (1641–1679) award?.", ["the", "(", "1641–1679", ")", "award", "?", "."]),
])
def test_the_tokenizer_splits_as_spacy_2_did_in_mrqa(text: str, tokens: list[str]) -> None:
    found = tokenize(text)
    assert [t for t, _ in found] == tokens
    assert all(text[offset:offset + len(t)] == t for t, offset in found)


def test_question_tokens_keep_white_space_tokens_and_context_tokens_do_not() -> None:
    assert tokenize(" Where did  he go?", keep_space=True) == [
        (" ", 0), ("Where", 1), ("did", 7), (" ", 11), ("he", 12), ("go", 15), ("?", 17)]
    assert tokenize("O\n2 molecule") == [("O", 0), ("2", 2), ("molecule", 4)]


def test_the_legacy_set_order_is_that_of_mrqas_files() -> None:
    spans = [(0, 1), (51, 52), (86, 87), (114, 115), (131, 132)]
    assert _legacy_set_order(spans) == [(0, 1), (86, 87), (51, 52), (114, 115), (131, 132)]
    assert _legacy_set_order([(0, 2), (13, 15), (36, 38)]) == [(13, 15), (0, 2), (36, 38)]
    many = [(i, i + 1) for i in range(0, 400, 7)]  # grows the table twice
    assert sorted(_legacy_set_order(many)) == many


# --------------------------------------------------------------------------- hand-built files


def test_a_context_is_cut_at_800_tokens_and_answers_beyond_it_are_dropped_and_counted(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(900)]
    context = " ".join(words)
    at = {w: context.index(f" {w} ") + 1 for w in ("w10", "w799", "w800", "w850")}
    source = _write(tmp_path / "long.json", _squad(
        (context, [
            _qa("inside", ("w10", at["w10"])),
            _qa("last", ("w799", at["w799"])),  # the 800th token: kept
            _qa("beyond", ("w800", at["w800"]), ("w850", at["w850"])),
            _qa("partly", ("w850", at["w850"]), ("w10", at["w10"])),  # one answer inside is enough
            _qa("unaligned", ("w1", at["w10"] + 1)),  # "0" inside "w10"
        ]),
        ("A short one about terns.", [_qa("short", ("terns", 18))]),
        ("Nothing left here.", [_qa("gone", ("left", 9), impossible=True)]),
        version="2.0",
    ))
    out = tmp_path / "long.jsonl"
    code, counts, err = _cli_quiet("mrqa-build", source, out, "--dataset", "Long")
    assert code == 0
    assert counts["questions"] == {"read": 7, "written": 4, "unanswerable_dropped": 1,
                                   "no_answer_on_token_boundaries_dropped": 1, "answer_outside_cut_dropped": 1}
    assert counts["contexts"] == {"read": 3, "written": 2, "cut_to_max_tokens": 1, "left_without_questions": 1}
    assert "3 of 7 questions dropped: 1 unanswerable, 1 without an answer on token boundaries, 1 with their " \
           "answers beyond the first 800 tokens (1 contexts cut)" in err
    header, first, second = _lines(out)
    assert header == {"header": {"dataset": "Long", "split": "dev"}}
    assert len(first["context_tokens"]) == 800
    assert first["context"] == context[:at["w799"] + len("w799")]
    assert [qa["id"] for qa in first["qas"]] == ["inside", "last", "partly"]
    partly = first["qas"][2]
    assert partly["answers"] == ["w850", "w10"]  # every gold text stays in answers, as MRQA's files keep them
    assert partly["detected_answers"] == [{"text": "w10", "char_spans": [[at["w10"], at["w10"] + 2]],
                                           "token_spans": [[10, 10]]}]
    # Inclusive ends: context[start:end + 1] is the answer.
    for record in (first, second):
        for qa in record["qas"]:
            for d in qa["detected_answers"]:
                (start, end), = d["char_spans"]
                assert record["context"][start:end + 1] == d["text"]
                (first_token, last_token), = d["token_spans"]
                assert record["context_tokens"][first_token][1] == start
    assert len(load_mrqa_gold(out, strict=True).questions) == 4


def test_articles_with_titles_use_the_tle_sep_and_par_separators(tmp_path: Path) -> None:
    source = _write(tmp_path / "a.json", _squad(
        ("Terns are seabirds.", [_qa("q1", ("seabirds", 10))]),
        ("They fly far.", [_qa("q2", ("far", 9))]),
    ))
    out = tmp_path / "a.jsonl.gz"
    code, counts, _ = _cli_quiet("mrqa-build", source, out, "--articles", "--titles")
    assert code == 0 and counts["contexts"]["written"] == 1
    _, record = _lines(out)
    assert record["context"] == "[TLE] Terns [SEP] Terns are seabirds. [PAR] They fly far."
    assert [t for t, _ in record["context_tokens"][:6]] == ["[", "TLE", "]", "Terns", "[", "SEP"]
    spans = {qa["id"]: qa["detected_answers"][0]["char_spans"][0] for qa in record["qas"]}
    assert record["context"][spans["q2"][0]:spans["q2"][1] + 1] == "far"
    assert record["context"][spans["q1"][0]:spans["q1"][1] + 1] == "seabirds"


def test_documents_are_joined_with_doc() -> None:
    text, starts = join_documents([("One", ["a b", "c"]), (None, ["d"])])
    assert text == "[TLE] One [SEP] a b [PAR] c [DOC] d"
    assert [[text[s] for s in doc] for doc in starts] == [["a", "c"], ["d"]]
    assert join_documents([(None, ["plain"])]) == ("plain", [[0]])


def test_an_answer_starting_at_0_is_searched_everywhere_unless_offsets_are_trusted(tmp_path: Path) -> None:
    context = "The Terns and the terns."
    source = _write(tmp_path / "z.json", _squad((context, [_qa("q", ("The Terns", 0), ("terns", 18))])))
    searched = build_mrqa(str(source)).records[0]["qas"][0]["detected_answers"]
    # As in MRQA's files: "The Terns" matches both occurrences ("the" normalises to nothing),
    # listed in the order a Python 3.7 set gives them.
    assert searched[0] == {"text": "The Terns", "token_spans": [[4, 4], [1, 1]], "char_spans": [[18, 22], [4, 8]]}
    assert searched[1] == {"text": "terns", "char_spans": [[18, 22]], "token_spans": [[4, 4]]}
    trusted = build_mrqa(str(source), trust_zero_offsets=True).records[0]["qas"][0]["detected_answers"]
    assert trusted[0] == {"text": "The Terns", "char_spans": [[0, 8]], "token_spans": [[0, 1]]}


def test_qids_are_32_hex_digits_and_the_same_on_every_build(tmp_path: Path) -> None:
    source = _write(tmp_path / "q.json", _squad(("Terns fly.", [_qa("a", ("Terns", 0)), _qa("b", ("fly", 6))])))
    first = [qa["qid"] for qa in build_mrqa(str(source)).records[0]["qas"]]
    again = [qa["qid"] for qa in build_mrqa(str(source)).records[0]["qas"]]
    assert first == again and len(set(first)) == 2
    assert all(len(q) == 32 and int(q, 16) >= 0 for q in first)
    other = [qa["qid"] for qa in build_mrqa(str(source), dataset="Other").records[0]["qas"]]
    assert not set(other) & set(first)


# --------------------------------------------------------------------------- other sources


@pytest.mark.shared
def test_squad_2_unanswerable_questions_are_dropped_and_counted() -> None:
    build = build_mrqa(str(shared_path("data", "squad-v2.0", "dev-v2.0.json")), dataset="SQuAD2")
    summary = build.stats.summary()
    assert summary["questions"] == {"read": 6078, "written": 2894, "unanswerable_dropped": 3168,
                                    "no_answer_on_token_boundaries_dropped": 16, "answer_outside_cut_dropped": 0}


@pytest.mark.shared
def test_quac_loses_cannotanswer_and_coqa_keeps_its_extractive_answers(tmp_path: Path) -> None:
    quac = build_mrqa(str(shared_path("data", "quac-excerpt", "val_v0.2.json")))
    assert quac.stats.summary()["questions"]["written"] == 31 and quac.stats.unanswerable == 10
    assert not any("CANNOTANSWER" in r["context"] for r in quac.records)
    coqa = build_mrqa(str(shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json")))
    assert coqa.stats.questions_read == 12 and coqa.stats.questions_written == 9
    for record in coqa.records:
        for qa in record["qas"]:
            assert len(qa["answers"]) == len(qa["detected_answers"])
            assert not {"yes", "no", "unknown"} & {a.lower() for a in qa["answers"]}
    cotton = coqa.records[0]["qas"][0]
    assert cotton["question"] == "What color was Cotton?" and cotton["answers"][0] == "white"
    assert cotton["detected_answers"][0]["char_spans"] == [[68, 72]]  # in the rationale, not elsewhere
    for build, name in ((quac, "quac"), (coqa, "coqa")):
        path = tmp_path / f"{name}.jsonl.gz"
        path.write_bytes(gzip.compress("\n".join([build.header, *map(json.dumps, build.records)]).encode()))
        assert len(load_mrqa_gold(path, strict=True).questions) == build.stats.questions_written


@pytest.mark.shared
def test_dureader_is_refused_with_a_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert_one_line_error(capsys, ["mrqa-build", shared_path("data", "dureader-demo", "search.dev.json"),
                                   tmp_path / "x.jsonl.gz"], "DuReader", "abstractive")


# --------------------------------------------------------------------------- partition


def _records(sizes: list[int], *, repeat: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Context records with the given numbers of questions; ``repeat`` gives record i the text of record j."""
    records = []
    for i, size in enumerate(sizes):
        text = f"context {(repeat or {}).get(i, i)}"
        records.append({"id": "", "context": text, "qas": [{"qid": f"q{i}-{k}", "question": "?", "answers": ["a"]}
                                                            for k in range(size)]})
    return records


def test_the_partition_puts_no_context_in_both_and_reaches_the_target() -> None:
    records = _records([3, 1, 4, 1, 5, 9, 2, 6, 5, 3] * 10, repeat={7: 3, 50: 3})
    dev, test = partition_records([records], test_questions=100, seed=1)
    assert sum(len(r["qas"]) for r in test) == 100
    assert not {r["context"] for r in dev} & {r["context"] for r in test}
    assert Counter(json.dumps(r) for r in dev + test) == Counter(json.dumps(r) for r in records)
    assert partition_records([records], test_questions=100, seed=1) == (dev, test)
    assert partition_records([records], test_questions=100, seed=2) != (dev, test)


def test_the_partition_draws_from_the_first_input_first() -> None:
    first, second = _records([2] * 5), _records([2] * 50)
    for r in second:
        r["context"] += " (train)"
    _, test = partition_records([first, second], test_questions=14, seed=0)
    assert sum(r in test for r in first) == 5 and sum(len(r["qas"]) for r in test) == 14


def test_the_partition_refuses_a_target_that_leaves_no_dev_portion() -> None:
    with pytest.raises(InputFormatError, match="between 1 and 9"):
        partition_records([_records([5, 5])], test_questions=10)


@pytest.mark.shared
@pytest.mark.slow
def test_partitioned_squad_loads_as_dev_and_test_portions(
    built_squad_dev: tuple[Path, dict[str, Any], MrqaFile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _, original = built_squad_dev
    dev, test = tmp_path / "dev.jsonl.gz", tmp_path / "test.jsonl.gz"
    code, summary, _ = run_cli(capsys, "mrqa-partition", source, "--dev-out", dev, "--test-out", test,
                               "--test-questions", 1500, "--seed", 13)
    assert code == 0
    assert summary["test"] == {"output": str(test), "contexts": summary["test"]["contexts"], "questions": 1500}
    assert summary["dev"]["questions"] == 10507 - 1500
    dev_file, test_file = read_mrqa_file(str(dev)), read_mrqa_file(str(test))
    assert not {r["context"] for r in dev_file.records} & {r["context"] for r in test_file.records}
    # The union is the input: the same lines, each once (both files are json.dumps of the records).
    lines = [gzip.decompress(p.read_bytes()).decode("utf-8").splitlines()[1:] for p in (source, dev, test)]
    assert Counter(lines[1] + lines[2]) == Counter(lines[0])
    # The same seed gives the same portions.
    assert partition_records([original.records], test_questions=1500, seed=13) == (dev_file.records, test_file.records)
    for path, split in ((dev, "dev"), (test, "test")):
        gold = load_mrqa_gold(path, strict=True)
        assert gold.header == {"header": {"dataset": "SQuAD", "split": split}}
