"""The shape-aware reader of prediction JSON (``answers_json``), for uploads and systems' outputs.

It must read every valid file as ``json.loads`` does, refuse a wrong shape where it starts (before
the rest is read: that is what bounds its memory), refuse a key given twice naming it, and word
syntax errors as ``json`` does, at the same line and column.  The memory itself is measured by
``tests/benchmarks/bench_upload_memory.py``, not here.
"""

from __future__ import annotations

import io
import json
import random
import tracemalloc
import zipfile
from typing import Any

import pytest

from leaderboard.challenges.suites import SUITES
from leaderboard.core.errors import PayloadTooLarge
from leaderboard.sandbox import answers_json
from leaderboard.sandbox.answers_json import NotJson, answers_decode
from leaderboard.sandbox.contract import RunDataset, RunOutcome
from leaderboard.submissions.evaluation import _output_predictions, _OutputRejected
from leaderboard.submissions.models import Verdict
from leaderboard.submissions.uploads import DatasetTarget, UploadError, parse_upload

QIDS = ["q1", "q2", "q3"]
TARGETS = [DatasetTarget("squad", ("SQuAD",), QIDS), DatasetTarget("newsqa", ("NewsQA",), ["n1", "n2"])]
ONE = [TARGETS[0]]
CAP = 10**6


def upload(raw: bytes, *, targets: list[DatasetTarget] = TARGETS, name: str = "p.json", **kwargs: Any) -> Any:
    return parse_upload(raw, filename=name, targets=targets, max_expanded_bytes=kwargs.pop("cap", CAP), **kwargs)


def refused(raw: bytes, **kwargs: Any) -> str:
    with pytest.raises(UploadError) as caught:
        upload(raw, **kwargs)
    return str(caught.value)


def zipped(members: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# --------------------------------------------------------------------------- valid files read as json does


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice(["a", "Z", " ", "é", "中", "😀", '"', "\\", "/", "\n", "\t", "\u2028", "\x7f", "\x00"])
                   for _ in range(rng.randint(0, 8)))


def test_every_valid_file_reads_as_json_loads_reads_it() -> None:
    rng = random.Random(17)
    for _ in range(400):
        qids = [_random_string(rng) + str(i) for i in range(6)]
        document: dict[str, Any] = {}
        for qid in qids[:5]:
            document[qid] = rng.choice([
                _random_string(rng),
                {"answers": [_random_string(rng)], "yesno_answers": [], "entity_answers": [[_random_string(rng)], []],
                 "n": rng.choice([0, -12, 2.5e-3, 1e300, True, False, None])},
                {"answer": _random_string(rng), "yesno": "y", "followup": "m"},
                rng.choice([7, -0.5, None, True]),
            ])
        document["not a question " + _random_string(rng)] = {"x": [1, ["y"]]}
        text = json.dumps(document, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 0, 2, "\t"]),
                          separators=rng.choice([None, (",", ":"), (" , ", " : ")]))
        raw = ("\ufeff" + text if rng.random() < 0.2 else text).encode("utf-8")
        answers = answers_decode(raw, where="w", qids=qids)
        assert answers.by_qid == {k: v for k, v in json.loads(text).items() if k in qids}
        assert list(answers.by_qid) == [q for q in json.loads(text) if q in qids]  # upload order kept
        assert answers.n_unknown == 1


def test_answers_are_filed_under_the_golds_own_strings() -> None:
    qid = "".join(["q", "1"])  # not the literal's interned object
    answers = answers_decode(b'{"q1": "x"}', where="w", qids=[qid])
    assert next(iter(answers.by_qid)) is qid


@pytest.mark.parametrize("text", [
    '{"squad": {"q1": "a",}}', '{"a" 1}', '{"a":1 "b":2}', '{"a":1}x', "", "  ", '{"a":}', '{"q1": 1.}',
    '{"q1": 01}', '{"q1": tru}', '{"q1": "abc', '{"q1": "a\x01"}', '{"q1": "\\u12"}', '{"q1": "\\x"}',
    '{\n  "q1": "a",\n  "q2" "b"\n}', '{"q1": "é", "q2": "ü" "q3": 1}', '{"q1": {"answers": ["a" "b"]}}',
    '{"q1": {"answers": [,]}}', '{"q1": {"a": 1,}}', '{"q1"', "{",
])
def test_a_syntax_error_is_worded_and_placed_as_json_places_it(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(NotJson) as caught:
        answers_decode(text.encode(), where="p.json", qids=QIDS)
    message = expected.value.msg.removesuffix(" starting at").removesuffix(" at")
    assert caught.value.message.startswith(f"p.json: not valid JSON: {message}")
    assert caught.value.message.endswith(f" at line {expected.value.lineno}, column {expected.value.colno}")


def test_an_integer_python_cannot_hold_is_not_usable_json_wherever_it_is() -> None:
    for raw in (b'{"q1": ' + b"7" * 5000 + b"}", b'{"zz": {"x": [' + b"7" * 5000 + b"]}}"):
        with pytest.raises(NotJson, match="p.json: not usable JSON: .*4300 digits"):
            answers_decode(raw, where="p.json", qids=QIDS)


@pytest.mark.parametrize("before_cut", [0, 1, 2, 3])
def test_a_byte_that_is_not_utf8_is_named_with_its_line_even_near_where_the_check_cuts_the_file(
    before_cut: int,
) -> None:
    # The file is checked a chunk at a time; a character may straddle the first cut.
    head = b'{"q1": "' + b"a" * (answers_json._UTF8_CHUNK - 8 - before_cut) + "中".encode()
    assert answers_decode(head + b'"}', where="w", qids=QIDS).by_qid["q1"].endswith("a中")
    with pytest.raises(NotJson) as caught:
        answers_decode(head + b"\nx" + "中".encode()[:2] + b'x"}', where="p.json", qids=QIDS)
    assert caught.value.message == "p.json: not UTF-8 (byte 0xe4 on line 2); save the file as UTF-8"
    cut_short = head[: -3] + "中".encode()[:2] + b'x"}'  # a character cut short across the cut
    with pytest.raises(NotJson, match=r"^p.json: not UTF-8 \(byte 0xe4 on line 1\)"):
        answers_decode(cut_short, where="p.json", qids=QIDS)


# --------------------------------------------------------------------------- wrong shapes, refused where they start


# A tail that is not JSON at all: were the value read, the error would be a syntax error.
UNREAD = b", {}, {}, this is never read"


@pytest.mark.parametrize(("raw", "fragment"), [
    (b"[{}, {}" + UNREAD, "p.json: expected a JSON object ({dataset: {qid: answer}} or {qid: answer}), found list"),
    (b'"answers"', "found string"),
    (b"42", "found number"),
    (b"null", "found null"),
    (b'{"q1": [{}, {}' + UNREAD, "p.json [squad], id 'q1': the answer should be a string (or an object, where the "
                                 "challenge's answers have fields), found list"),
    (b'{"not-a-question": [{}' + UNREAD, "id 'not-a-question': the answer should be a string"),
    (b'{"squad": [{}, {}' + UNREAD,
     "p.json: expected a JSON object {qid: answer} for dataset 'squad', found list"),
    (b'{"q1": {"answers": {"a": 1}' + UNREAD, "p.json [squad], id 'q1': field 'answers' holds an object"),
    (b'{"q1": {"answers": [{}' + UNREAD, "id 'q1': field 'answers' holds an object in its list"),
    (b'{"q1": {"answers": [[[]' + UNREAD, "id 'q1': field 'answers' nests lists more than two deep"),
])
def test_a_wrong_shape_is_refused_where_it_starts_naming_file_dataset_and_question(raw: bytes, fragment: str) -> None:
    message = refused(raw, targets=ONE)
    assert fragment in message, message


def test_a_dataset_value_of_the_wrong_shape_is_refused_in_a_several_dataset_upload() -> None:
    message = refused(b'{"squad": {"q1": "a", "q2": "b", "q3": "c"}, "newsqa": "answers"}')
    assert message == "p.json: expected a JSON object {qid: answer} for dataset 'newsqa', found string"


def test_answer_objects_may_hold_a_few_values_per_question_not_the_upload_limits_worth() -> None:
    budget = max(answers_json.ANSWER_VALUES_PER_QUESTION * len(QIDS), answers_json._MIN_ANSWER_VALUES)
    many = json.dumps({"q1": {"answers": ["x"] * budget}}).encode()
    message = refused(many, targets=ONE)
    assert message.startswith("p.json [squad]: the answers' fields hold too many values")
    few = json.dumps({"q1": {"answers": ["x"] * (budget - 1)}, "q2": "b", "q3": "c"}).encode()
    assert len(upload(few, targets=ONE)["squad"].by_qid["q1"]["answers"]) == budget - 1


def test_ids_that_are_not_questions_are_counted_and_the_first_named_shortened() -> None:
    long_id = "L" * 5000
    document = {"q1": "a", long_id: "x", **{f"u{i}": {"answers": ["x"]} for i in range(10)}}
    answers = upload(json.dumps(document).encode(), targets=ONE)["squad"]
    assert answers.by_qid == {"q1": "a"}
    assert answers.n_unknown == 11
    assert answers.unknown_ids == ["L" * 80 + "...", "u0", "u1", "u2", "u3"]


# --------------------------------------------------------------------------- keys given twice


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"squad": {"q1": "a"}, "newsqa": {"n1": "b"}, "squad": {"q1": "c"}}', "p.json: dataset 'squad' appears twice"),
    (b'{"SQuAD": {"q1": "a"}, "squad": {"q1": "c"}}', "p.json: dataset 'squad' appears twice"),
    (b'{"squad": {"q1": "a", "q2": "b", "q1": "c"}}',
     "p.json [squad], id 'q1': appears twice; give one answer per question"),
    (b'{"squad": {"q1": "a", "q2": "b", "q\\u0031": "c"}}',
     "p.json [squad], id 'q1': appears twice; give one answer per question"),
    (b'{"squad": {"q1": {"answers": ["a"], "answers": ["b"]}}}', "p.json [squad], id 'q1': field 'answers' appears twice"),
])
def test_a_key_given_twice_is_refused_naming_it(raw: bytes, message: str) -> None:
    assert refused(raw) == message


def test_a_question_answered_twice_in_a_one_dataset_upload_is_refused() -> None:
    assert refused(b'{"q2": "a", "q1": "b", "q2": "c"}', targets=ONE) == (
        "p.json [squad], id 'q2': appears twice; give one answer per question"
    )


def test_a_question_answered_twice_inside_a_zip_member_is_refused_naming_the_member() -> None:
    raw = zipped({"squad.json": '{"q1": "a", "q2": "b", "q3": "c", "q1": "d"}', "newsqa.json": '{"n1": "a"}'})
    assert refused(raw, name="p.zip") == "p.zip:squad.json, id 'q1': appears twice; give one answer per question"


def test_two_members_for_one_dataset_are_refused() -> None:
    raw = zipped({"squad.json": '{"q1": "a"}', "sub/SQuAD.json": '{"q1": "a"}'})
    assert refused(raw, name="p.zip") == "p.zip: two members for dataset 'squad'"


# --------------------------------------------------------------------------- archives: the expansion cap


def test_an_archive_may_expand_to_the_cap_and_not_a_byte_more() -> None:
    squad, newsqa = '{"q1": "a", "q2": "b", "q3": "c"}', '{"n1": "a", "n2": "b"}'
    raw = zipped({"squad.json": squad, "newsqa.json": newsqa})
    total = len(squad) + len(newsqa)
    assert set(upload(raw, name="p.zip", cap=total)) == {"squad", "newsqa"}
    with pytest.raises(PayloadTooLarge, match=f"^p.zip: the archive expands to more than {total - 1} bytes$"):
        upload(raw, name="p.zip", cap=total - 1)


def test_the_archive_cap_follows_the_upload_limit(settings: Any) -> None:
    assert settings.MAX_PREDICTION_ARCHIVE_BYTES == settings.MAX_PREDICTION_UPLOAD_BYTES * 6 // 5


def test_an_archive_member_of_an_unknown_dataset_is_refused_before_it_is_read() -> None:
    raw = zipped({"squad.json": '{"q1": "a"}', "other.json": b"\xff not even UTF-8"})
    assert refused(raw, name="p.zip") == "p.zip: unknown dataset 'other'; this phase scores: squad, newsqa"


# --------------------------------------------------------------------------- which form an upload is in


def test_the_form_of_a_plain_file_follows_its_first_member() -> None:
    both = b'{"squad": {"q1": "a", "q2": "b", "q3": "c"}, "NewsQA": {"n1": "a", "n2": "b"}}'
    assert {k: v.by_qid for k, v in upload(both).items()} == {
        "squad": {"q1": "a", "q2": "b", "q3": "c"}, "newsqa": {"n1": "a", "n2": "b"}}
    one = b'{"q1": "a", "q2": "b", "q3": "c"}'
    assert upload(one, targets=ONE)["squad"].by_qid == {"q1": "a", "q2": "b", "q3": "c"}
    assert upload(b'{"n1": "a", "n2": "b", "squad": {}}', dataset_hint="newsqa", targets=[TARGETS[1]])
    assert refused(b'{"squad": {"q1": "a"}, "typo": {"x": "y"}}') == (
        "p.json: unknown dataset 'typo'; this phase scores: squad, newsqa")
    assert refused(b'{"typo": {"x": "y"}, "squad": {"q1": "a"}}').startswith(
        "p.json: unknown dataset 'typo'; this phase scores several datasets (squad, newsqa)")
    assert refused(b'{"q1": "a"}').startswith("p.json: this phase scores several datasets (squad, newsqa); upload")
    assert upload(b"{}", targets=ONE)["squad"].by_qid == {}  # then every question lacks an answer


# --------------------------------------------------------------------------- systems' outputs


def output_verdict(raw: bytes) -> tuple[str, str]:
    ds = RunDataset(slug="squad", label="SQuAD", format="mrqa", source="", input_name="squad.jsonl.gz",
                    output_name="squad.json")
    outcome = RunOutcome(exit_code=0, timed_out=False, oom_killed=False, output_too_large=False, duration_s=1.0,
                         logs="", runtime="runc", outputs={"squad": raw})

    with pytest.raises(_OutputRejected) as caught:
        _output_predictions(SUITES["mrqa"], ds, outcome, QIDS)
    return caught.value.verdict, caught.value.reason


@pytest.mark.parametrize(("raw", "verdict", "reason"), [
    (b'{"q1": "a", "q2": "b", "q3": "c", "q2": "d"}', Verdict.OUTPUT_WRONG_SHAPE,
     "/output/squad.json (dataset SQuAD), id 'q2': appears twice; give one answer per question"),
    (b"[{}, {}" + UNREAD, Verdict.OUTPUT_WRONG_SHAPE,
     "/output/squad.json (dataset SQuAD): expected a JSON object {qid: answer}, found list"),
    (b'{"q1": [{}' + UNREAD, Verdict.OUTPUT_WRONG_SHAPE, "id 'q1': the answer should be a string"),
    (b'{"q1": 3, "q2": "b", "q3": "c"}', Verdict.OUTPUT_WRONG_SHAPE, "id 'q1': the answer should be a string, found int"),
    (b'{"q1": "a",}', Verdict.OUTPUT_NOT_JSON, "/output/squad.json (dataset SQuAD): not valid JSON: Expecting property"),
    (b'{"q1": "\xe9"}', Verdict.OUTPUT_NOT_JSON, "not UTF-8 (byte 0xe9 on line 1)"),
    (b'{"q1": "a", "q2": "b", "q3": "c", "zz": "d"}', Verdict.UNKNOWN_IDS, "1 id(s) are not questions of this dataset"),
    (b'{"q1": "a", "q2": "b"}', Verdict.ANSWERS_MISSING, "1 question(s) have no prediction (e.g. 'q3')"),
])
def test_an_output_is_judged_by_the_same_reader_with_its_verdict(raw: bytes, verdict: str, reason: str) -> None:
    got_verdict, got_reason = output_verdict(raw)
    assert got_verdict == verdict
    assert reason in got_reason, got_reason


def test_a_good_output_is_read() -> None:
    ds = RunDataset(slug="squad", label="SQuAD", format="mrqa", source="", input_name="i", output_name="squad.json")
    outcome = RunOutcome(exit_code=0, timed_out=False, oom_killed=False, output_too_large=False, duration_s=1.0,
                         logs="", runtime="runc", outputs={"squad": b'{"q3": "c", "q1": "a", "q2": "b"}'})

    assert _output_predictions(SUITES["mrqa"], ds, outcome, QIDS) == {"q3": "c", "q1": "a", "q2": "b"}


def test_a_zipped_upload_whose_directory_lists_too_many_files_is_refused_before_zipfile_reads_it() -> None:
    """A prediction zip's directory is checked from its end record (systems.zip_directory_check, the
    check code bundles get) before ZipFile builds an entry per file: 60,000 one-letter entries, refused
    (the quota costs nothing), would otherwise cost the web process tens of MiB each time."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for n in range(60_000):
            z.writestr(f"{n}", b"")
    raw = buf.getvalue()
    tracemalloc.start()
    try:
        with pytest.raises(UploadError) as caught:
            parse_upload(raw, filename="p.zip", targets=TARGETS, max_expanded_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.message == "p.zip: 60000 files in the archive; at most 200"
    assert peak < 2 * 2**20 + len(raw), peak  # a copy of the upload's bytes at most, no entry objects

    # A few long names are refused by the directory's size, whatever the end record counts.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n in range(150):
            z.writestr(f"{n}-{'x' * 2000}.json", b"{}")
    assert "list of files is over 256 KiB" in refused(buf.getvalue(), name="p.zip")
