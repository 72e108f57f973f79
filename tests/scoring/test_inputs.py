"""Answer-free inputs by allowlist, and re-keyed inputs of sealed datasets (scoring.inputs).

Each format gets a record with every field it has and a canary in every field a
system must not see (tests/scoring/every_field.py); the real files under
../shared/data show that real records come through with what a system needs.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scoring import squad
from scoring.errors import InputFormatError
from scoring.inputs import (
    COQA,
    DEEPREAD,
    DUREADER,
    FORMATS,
    ID_CHARS,
    MRQA_CONTEXT,
    MRQA_HEADER,
    QUAC,
    alias_for,
    build_inputs,
    coqa_qid,
    document_inputs,
    iter_input_lines,
    rekey,
    squad2_fields,
)
from scoring.io import iter_json_lines, load_json
from scoring.mrqa import evaluate_mrqa, load_mrqa_gold
from tests.builders.shared import shared_path
from tests.scoring.every_field import (
    ANSWER_KEYS,
    COQA_STORY,
    ELLA_DIALOG,
    KITE_STORY,
    TERN_TOKENS,
    allowed_keys,
    canaries_in,
    coqa_document,
    deepread_document,
    dureader_lines,
    dureader_record,
    keys_of,
    mrqa_gzip,
    mrqa_lines,
    quac_document,
    squad2_document,
)

KEY = b"challenge secret one"
OTHER_KEY = b"challenge secret two"


def _write(path: Path, content: bytes | Any) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode("utf-8"))
    return path


def _lines(data: bytes) -> list[Any]:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def _qas(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [qa for article in document["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]]


# Each format: its gold file with every field, written to disk.
GOLDS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "mrqa": ("gold.jsonl.gz", lambda: mrqa_gzip(mrqa_lines())),
    "dureader": ("gold.jsonl", dureader_lines),
    "squad2": ("gold.json", lambda: json.dumps(squad2_document()).encode("utf-8")),
    "quac": ("gold.json", lambda: json.dumps(quac_document()).encode("utf-8")),
    "coqa": ("gold.json", lambda: json.dumps(coqa_document()).encode("utf-8")),
    "deepread": ("gold.json", lambda: json.dumps(deepread_document()).encode("utf-8")),
}
ALLOWED = {
    "mrqa": allowed_keys(MRQA_HEADER) | allowed_keys(MRQA_CONTEXT),
    "dureader": allowed_keys(DUREADER),
    "squad2": allowed_keys(squad2_fields(keep_levels=True)),
    "quac": allowed_keys(QUAC),
    "coqa": allowed_keys(COQA),
    "deepread": allowed_keys(DEEPREAD),
}


def _gold(fmt: str, tmp_path: Path) -> Path:
    name, make = GOLDS[fmt]
    return _write(tmp_path / name, make())


def _parsed(fmt: str, data: bytes) -> Any:
    return _lines(data) if fmt in ("mrqa", "dureader") else json.loads(data)


# --------------------------------------------------------------------------- the allowlists


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_canary_and_no_answer_field_survives(fmt: str, tmp_path: Path) -> None:
    gold = _gold(fmt, tmp_path)
    assert canaries_in(gold.read_bytes() if fmt != "mrqa" else gzip.decompress(gold.read_bytes()))
    out = build_inputs(fmt, gold, keep_levels=True)
    assert canaries_in(out if fmt != "mrqa" else gzip.decompress(out)) == []
    keys = keys_of(_parsed(fmt, out))
    assert not keys & ANSWER_KEYS
    assert keys <= ALLOWED[fmt]


def test_mrqa_keeps_the_header_contexts_and_questions(tmp_path: Path) -> None:
    lines = mrqa_lines()
    header, *contexts = [json.loads(line) for line in iter_input_lines("mrqa", _gold("mrqa", tmp_path))]
    assert header == {"header": {"dataset": "TernQA", "split": "dev"}}
    assert [c["id"] for c in contexts] == ["ctx-tern-1", "ctx-tern-2"]
    for before, after in zip(lines[1:], contexts, strict=True):
        assert list(after) == ["id", "context", "context_tokens", "qas"]
        assert after["context"] == before["context"] and after["context_tokens"] == TERN_TOKENS
        assert after["qas"] == [{k: qa[k] for k in ("qid", "question", "question_tokens")} for qa in before["qas"]]


def test_dureader_keeps_what_the_official_test_sets_have(tmp_path: Path) -> None:
    (after, _) = _lines(build_inputs("dureader", _gold("dureader", tmp_path)))
    before = dureader_record(186358)
    assert set(after) == {"question_id", "question", "segmented_question", "question_type", "fact_or_opinion",
                          "yesno_type", "source", "documents"}
    assert {k: after[k] for k in after if k != "documents"} == {k: before[k] for k in after if k != "documents"}
    for doc_before, doc_after in zip(before["documents"], after["documents"], strict=True):
        # is_selected and most_related_para say where the answer is.
        assert doc_after == {k: doc_before[k] for k in ("title", "segmented_title", "segmented_paragraphs",
                                                        "paragraphs", "bs_rank_pos")}


def test_squad2_keeps_passages_questions_and_levels_only_when_allowed() -> None:
    gold = squad2_document()
    with_levels = json.loads(document_inputs("squad2", gold, keep_levels=True))
    assert with_levels == {"version": "v2.0", "data": [{"title": "Normans", "paragraphs": [{
        "context": gold["data"][0]["paragraphs"][0]["context"],
        "qas": [{"question": qa["question"], "id": qa["id"], "level": qa["level"]} for qa in _qas(gold)],
    }]}]}
    without = json.loads(document_inputs("squad2", gold, keep_levels=False))
    assert [set(qa) for qa in _qas(without)] == [{"question", "id"}] * 2
    assert gold == squad2_document()  # the gold document is not changed


def test_quac_keeps_the_dialog_setting_and_its_questions() -> None:
    out = json.loads(document_inputs("quac", quac_document()))
    article = out["data"][0]
    assert {k: article[k] for k in ("title", "section_title", "background")} == {
        "title": "Ella Fitzgerald", "section_title": "Early career",
        "background": "Ella Jane Fitzgerald was an American jazz singer."}
    paragraph = article["paragraphs"][0]
    assert paragraph["id"] == ELLA_DIALOG and paragraph["context"].endswith("CANNOTANSWER")
    assert paragraph["qas"] == [{"question": "What happened in 1934?", "id": f"{ELLA_DIALOG}_q#0"},
                                {"question": "Did she win anything?", "id": f"{ELLA_DIALOG}_q#1"}]


def test_coqa_keeps_stories_and_questions() -> None:
    out = json.loads(document_inputs("coqa", coqa_document()))
    assert out == {"version": "1.0", "data": [{
        "source": "mctest", "id": COQA_STORY, "story": coqa_document()["data"][0]["story"],
        "questions": [{"input_text": "what color was cotton?", "turn_id": 1},
                      {"input_text": "where did she live?", "turn_id": 2}],
    }]}


def test_deepread_keeps_stories_sentence_texts_and_questions() -> None:
    out = json.loads(document_inputs("deepread", deepread_document()))
    assert out == {
        "stories": [{"id": KITE_STORY, "title": "The Red Kite", "sentences": [
            {"text": "Tom built a red kite with his grandfather."}, {"text": "They flew it on the hill behind the school."},
        ]}],
        "questions": [{"id": "rm3-12-1", "story": KITE_STORY, "question": "Who helped Tom build the kite?"},
                      {"id": "rm3-12-2", "story": KITE_STORY, "question": "Where did they fly the kite?"}],
    }


def test_deepread_sealed_questions_name_their_story_by_its_new_id(tmp_path: Path) -> None:
    out, mapping = rekey("deepread", _stored("deepread", tmp_path), key=KEY, label="Hidden-7Q2K9D")
    document = json.loads(out)
    (story,) = document["stories"]
    assert story["id"] != KITE_STORY and re.fullmatch(f"[0-9a-f]{{{ID_CHARS}}}", story["id"])
    assert [q["story"] for q in document["questions"]] == [story["id"], story["id"]]
    assert [mapping[q["id"]] for q in document["questions"]] == ["rm3-12-1", "rm3-12-2"]
    assert story["title"] == "The Red Kite"  # read with the story, like a passage


def test_an_allowed_field_holding_an_object_is_withheld() -> None:
    # A converter that nests anything under an allowed name is not trusted with it.
    gold = squad2_document()
    qa = _qas(gold)[0]
    qa["question"] = {"text": qa["question"], "answer": "CANARY-nested"}
    gold["data"][0]["title"] = [["Normans", {"answer": "CANARY-deep"}]]
    out = document_inputs("squad2", gold)
    assert canaries_in(out) == []
    assert "question" not in _qas(json.loads(out))[0] and "title" not in json.loads(out)["data"][0]


def test_mrqa_output_is_gzipped_without_a_time_stamp_and_deterministic(tmp_path: Path) -> None:
    gold = _gold("mrqa", tmp_path)
    first, second = build_inputs("mrqa", gold), build_inputs("mrqa", gold)
    assert first == second and first[:2] == b"\x1f\x8b" and first[4:8] == b"\0\0\0\0"
    plain = _write(tmp_path / "plain.jsonl", gzip.decompress(gold.read_bytes()))
    assert build_inputs("mrqa", plain) == first  # gzip is recognised by its magic number, not the name


def test_malformed_files_are_refused_with_the_usual_messages(tmp_path: Path) -> None:
    header, context, _ = mrqa_lines()
    late_header = _write(tmp_path / "late.jsonl", "\n".join(json.dumps(x) for x in (header, context, header)).encode())
    with pytest.raises(InputFormatError, match=r"line 3.*only the first line may be a header\), found a header"):
        build_inputs("mrqa", late_header)
    context["qas"] = ["not a question"]
    bad_qa = _write(tmp_path / "badqa.jsonl", json.dumps(context).encode())
    with pytest.raises(InputFormatError, match=r"line 1: qas\[0\] should be an object"):
        build_inputs("mrqa", bad_qa)
    bad_json = _write(tmp_path / "bad.jsonl", b'{"question_id": 1}\n{"question_id": \n')
    with pytest.raises(InputFormatError, match="line 2: invalid JSON"):
        build_inputs("dureader", bad_json)
    with pytest.raises(InputFormatError, match="not valid UTF-8"):
        build_inputs("dureader", _write(tmp_path / "latin1.jsonl", '{"question": "caf\u00e9"}'.encode("latin-1")))
    with pytest.raises(InputFormatError, match="corrupt gzip"):
        build_inputs("mrqa", _write(tmp_path / "cut.jsonl.gz", mrqa_gzip(mrqa_lines())[:40]))
    with pytest.raises(InputFormatError, match="file not found"):
        build_inputs("mrqa", tmp_path / "missing.jsonl.gz")
    with pytest.raises(InputFormatError, match=r"data\[0\]\.paragraphs should be a list"):
        document_inputs("quac", {"data": [{"paragraphs": {}}]})
    with pytest.raises(InputFormatError, match="'data' list"):
        document_inputs("coqa", [])
    with pytest.raises(ValueError, match="unknown input format"):
        build_inputs("squad1", tmp_path / "x.json")
    with pytest.raises(ValueError, match="JSON-lines"):
        document_inputs("mrqa", {"data": []})


# --------------------------------------------------------------------------- the real files


@pytest.mark.shared
def test_the_official_dureader_test_set_passes_through_unchanged_and_dev_loses_its_answers() -> None:
    test_file = shared_path("data", "dureader-demo", "search.test.json")
    assert _lines(build_inputs("dureader", test_file)) == [obj for _, obj in iter_json_lines(test_file)]
    dev_file = shared_path("data", "dureader-demo", "search.dev.json")
    dev = _lines(build_inputs("dureader", dev_file))
    originals = [obj for _, obj in iter_json_lines(dev_file)]
    assert [r["question_id"] for r in dev] == [r["question_id"] for r in originals]
    test_keys = keys_of([obj for _, obj in iter_json_lines(test_file)])
    assert keys_of(dev) <= test_keys and not keys_of(dev) & ANSWER_KEYS
    assert [[d["paragraphs"] for d in r["documents"]] for r in dev] == [
        [d["paragraphs"] for d in r["documents"]] for r in originals]


@pytest.mark.shared
@pytest.mark.parametrize("name", ["SQuAD.jsonl.gz", "HotpotQA.jsonl.gz", "DROP.jsonl.gz", "CoQA.jsonl.gz"])
def test_real_mrqa_files_keep_every_question_and_no_answer(name: str) -> None:
    src = shared_path("data", "mrqa-mini", name)
    lines = _lines(build_inputs("mrqa", src))
    assert lines[0] == next(iter_json_lines(src))[1]  # the header, which has only dataset and split
    assert [qa["qid"] for c in lines[1:] for qa in c["qas"]] == list(load_mrqa_gold(src).questions)
    assert not keys_of(lines) & ANSWER_KEYS


@pytest.mark.shared
def test_real_squad2_quac_and_coqa_files_keep_every_question_and_no_answer() -> None:
    squad2 = load_json(shared_path("data", "squad-v2.0", "dev-v2.0.json"))
    out = json.loads(document_inputs("squad2", squad2))
    assert [qa["id"] for qa in _qas(out)] == [qa["id"] for qa in _qas(squad2)] and len(_qas(out)) == 6078
    assert keys_of(out) == {"version", "data", "title", "paragraphs", "context", "qas", "id", "question"}
    quac = load_json(shared_path("data", "quac-excerpt", "val_v0.2.json"))
    out = json.loads(document_inputs("quac", quac))
    assert [qa["id"] for qa in _qas(out)] == [qa["id"] for qa in _qas(quac)] and len(_qas(out)) == 41
    assert not keys_of(out) & ANSWER_KEYS
    coqa = load_json(shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json"))
    out = json.loads(document_inputs("coqa", coqa))
    assert [s["questions"] for s in out["data"]] == [s["questions"] for s in coqa["data"]]
    assert keys_of(out) == {"version", "data", "source", "id", "story", "questions", "input_text", "turn_id"}


# --------------------------------------------------------------------------- re-keying sealed datasets


def _stored(fmt: str, tmp_path: Path) -> bytes:
    """The answer-free file the platform stores for the every-field gold."""
    return build_inputs(fmt, _gold(fmt, tmp_path), keep_levels=True)


# Each format: (original platform qids, the original strings no sealed copy may show).
def _originals(fmt: str) -> tuple[list[str], list[str]]:
    if fmt == "mrqa":
        return ["q-tern-1", "q-tern-2", "q-tern-3"], ["ctx-tern-1", "ctx-tern-2", "TernQA"]
    if fmt == "dureader":
        return ["186358", "186359"], ['"question_id": 186358', '"question_id": 186359', '"search"']
    if fmt == "squad2":
        qids = [qa["id"] for qa in _qas(squad2_document())]
        return qids, ['"Normans"']
    if fmt == "quac":
        return [qa["id"] for qa in _qas(quac_document())], [ELLA_DIALOG, "Ella Fitzgerald"]
    if fmt == "deepread":
        return ["rm3-12-1", "rm3-12-2"], [KITE_STORY]
    return [coqa_qid(COQA_STORY, 1), coqa_qid(COQA_STORY, 2)], [COQA_STORY, "mctest"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_sealed_inputs_show_no_original_id_or_name_and_the_map_restores_every_question(
    fmt: str, tmp_path: Path
) -> None:
    stored = _stored(fmt, tmp_path)
    out, mapping = rekey(fmt, stored, key=KEY, label="Hidden-7Q2K9D")
    text = (gzip.decompress(out) if fmt == "mrqa" else out).decode("utf-8")
    qids, names = _originals(fmt)
    for original in (*qids, *names):
        assert original not in text, original
    assert sorted(mapping.values()) == sorted(qids) and len(mapping) == len(qids)
    shown = mapping if fmt != "coqa" else [json.loads(out)["data"][0]["id"]]  # CoQA's qids are story_turn
    for visible in shown:
        assert visible in text
    assert canaries_in(text) == []
    assert not keys_of(_parsed(fmt, out)) & ANSWER_KEYS


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_same_key_gives_the_same_bytes_and_another_key_other_ids(fmt: str, tmp_path: Path) -> None:
    stored = _stored(fmt, tmp_path)
    out, mapping = rekey(fmt, stored, key=KEY, label="Hidden-7Q2K9D")
    assert rekey(fmt, stored, key=KEY, label="Hidden-7Q2K9D") == (out, mapping)
    other, other_mapping = rekey(fmt, stored, key=OTHER_KEY, label="Hidden-7Q2K9D")
    assert other != out and not set(other_mapping) & set(mapping)
    assert sorted(other_mapping.values()) == sorted(mapping.values())


def test_mrqa_header_names_the_label_and_ids_are_keyed_hex(tmp_path: Path) -> None:
    out, mapping = rekey("mrqa", _stored("mrqa", tmp_path), key=KEY, label="Hidden-7Q2K9D")
    header, *contexts = _lines(out)
    assert header == {"header": {"dataset": "Hidden-7Q2K9D", "split": "dev"}}
    for visible in (*mapping, *(c["id"] for c in contexts)):
        assert re.fullmatch(f"[0-9a-f]{{{ID_CHARS}}}", visible)
    assert [mapping[qa["qid"]] for c in contexts for qa in c["qas"]] == ["q-tern-1", "q-tern-2", "q-tern-3"]
    # Without a header the system is given one, so it never falls back to another name.
    headless = mrqa_gzip(mrqa_lines()[1:])
    assert _lines(rekey("mrqa", headless, key=KEY, label="Hidden-7Q2K9D")[0])[0] == {
        "header": {"dataset": "Hidden-7Q2K9D"}}
    # Plain JSON lines in, plain out.
    plain, plain_mapping = rekey("mrqa", gzip.decompress(_stored("mrqa", tmp_path)), key=KEY, label="Hidden-7Q2K9D")
    assert plain[:2] != b"\x1f\x8b" and plain == gzip.decompress(out) and plain_mapping == mapping


def test_quac_and_coqa_ids_keep_their_benchmarks_shape(tmp_path: Path) -> None:
    out, mapping = rekey("quac", _stored("quac", tmp_path), key=KEY, label="Hidden-7Q2K9D")
    paragraph = json.loads(out)["data"][0]["paragraphs"][0]
    assert [qa["id"] for qa in paragraph["qas"]] == [f"{paragraph['id']}_q#0", f"{paragraph['id']}_q#1"]
    assert json.loads(out)["data"][0]["section_title"] == "Early career"
    out, mapping = rekey("coqa", _stored("coqa", tmp_path), key=KEY, label="Hidden-7Q2K9D")
    story = json.loads(out)["data"][0]
    assert list(mapping) == [coqa_qid(story["id"], 1), coqa_qid(story["id"], 2)]
    assert [q["turn_id"] for q in story["questions"]] == [1, 2] and story["story"].startswith("Once upon")


def test_inputs_stored_by_the_older_deny_list_lose_the_same_fields_when_rekeyed() -> None:
    # What the platform used to store for MRC2018: only the top-level answer fields deleted.
    legacy = dureader_record(186358)
    for key in ("answers", "entity_answers", "yesno_answers", "segmented_answers", "fake_answers",
                "answer_spans", "answer_docs", "match_scores"):
        del legacy[key]
    out, mapping = rekey("dureader", json.dumps(legacy).encode() + b"\n", key=KEY, label="Hidden-7Q2K9D")
    assert canaries_in(out) == [] and "is_selected" not in out.decode() and "most_related_para" not in out.decode()
    assert list(mapping.values()) == ["186358"]


def test_rekey_refuses_an_empty_key_and_two_questions_sharing_a_visible_id(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="key"):
        rekey("squad2", _stored("squad2", tmp_path), key=b"", label="Hidden-7Q2K9D")
    gold = quac_document()
    paragraph = gold["data"][0]["paragraphs"][0]
    gold["data"][0]["paragraphs"].append({**paragraph, "qas": [{**qa, "id": qa["id"] + "x"} for qa in paragraph["qas"]]})
    with pytest.raises(InputFormatError, match="would both be shown as"):
        rekey("quac", document_inputs("quac", gold), key=KEY, label="Hidden-7Q2K9D")


def test_aliases_are_keyed_and_tell_nothing_about_order() -> None:
    alias = alias_for(KEY, "bioasq")
    assert re.fullmatch(r"Hidden-[0-9A-F]{6}", alias)
    assert alias == alias_for(KEY, "bioasq")
    assert alias != alias_for(OTHER_KEY, "bioasq")
    aliases = {alias_for(KEY, slug) for slug in ("bioasq", "drop", "race", "textbookqa", "relationextraction")}
    assert len(aliases) == 5


@pytest.mark.shared
@pytest.mark.parametrize("name", ["SQuAD.jsonl.gz", "HotpotQA.jsonl.gz", "QuAC.jsonl.gz"])
def test_a_real_mrqa_file_scores_the_same_through_the_map(name: str) -> None:
    src = shared_path("data", "mrqa-mini", name)
    gold = load_mrqa_gold(src)
    out, mapping = rekey("mrqa", build_inputs("mrqa", src), key=KEY, label="Hidden-7Q2K9D")
    text = gzip.decompress(out).decode("utf-8")
    contexts = [obj for _, obj in iter_json_lines(src)][1:]
    for original in (*gold.questions, *(c["id"] for c in contexts if c["id"])):
        assert original not in text, original
    assert gold.dataset not in _lines(out)[0]["header"].values()
    # A system answering every other question right, by the ids it was shown.
    shown = {visible: (gold.questions[original].answers[0] if i % 2 else "no idea")
             for i, (visible, original) in enumerate(mapping.items())}
    restored = {mapping[visible]: answer for visible, answer in shown.items()}
    direct = {qid: (q.answers[0] if i % 2 else "no idea") for i, (qid, q) in enumerate(gold.questions.items())}
    assert evaluate_mrqa(gold, restored).metrics == evaluate_mrqa(gold, direct).metrics
    assert list(mapping.values()) == list(gold.questions)


@pytest.mark.shared
def test_real_squad2_quac_coqa_and_dureader_files_are_sealed_completely() -> None:
    squad2 = load_json(shared_path("data", "squad-v2.0", "dev-v2.0.json"))
    out, mapping = rekey("squad2", document_inputs("squad2", squad2), key=KEY, label="Hidden-7Q2K9D")
    text = out.decode("utf-8")
    assert not any(qa["id"] in text for qa in _qas(squad2))
    assert not any(f'"{a["title"]}"' in text for a in squad2["data"])
    assert sorted(mapping.values()) == sorted(qa["id"] for qa in _qas(squad2))
    # A system that abstains on every third question and answers the rest right, by the ids it was shown.
    by_id = {qa["id"]: qa for qa in _qas(squad2)}
    answers = {qid: (qa["answers"][0]["text"] if qa["answers"] and n % 3 else "") for n, (qid, qa) in
               enumerate(by_id.items())}
    restored = {mapping[qa["id"]]: answers[mapping[qa["id"]]] for qa in _qas(json.loads(out))}
    assert squad.evaluate_squad_v2(squad2, restored).metrics == squad.evaluate_squad_v2(squad2, answers).metrics

    quac = load_json(shared_path("data", "quac-excerpt", "val_v0.2.json"))
    out, mapping = rekey("quac", document_inputs("quac", quac), key=KEY, label="Hidden-7Q2K9D")
    text = out.decode("utf-8")
    assert not any(p["id"] in text for a in quac["data"] for p in a["paragraphs"])
    assert not any(f'"{a["title"]}"' in text for a in quac["data"])
    assert sorted(mapping.values()) == sorted(qa["id"] for qa in _qas(quac))

    coqa = load_json(shared_path("data", "coqa-excerpt", "coqa-dev-v1.0.json"))
    out, mapping = rekey("coqa", document_inputs("coqa", coqa), key=KEY, label="Hidden-7Q2K9D")
    text = out.decode("utf-8")
    for story in coqa["data"]:
        assert story["id"] not in text and f'"{story["source"]}"' not in text and story["filename"] not in text
    assert list(mapping.values()) == [coqa_qid(s["id"], q["turn_id"]) for s in coqa["data"] for q in s["questions"]]

    dev = shared_path("data", "dureader-demo", "search.dev.json")
    out, mapping = rekey("dureader", build_inputs("dureader", dev), key=KEY, label="Hidden-7Q2K9D")
    originals = [obj for _, obj in iter_json_lines(dev)]
    shown = _lines(out)
    assert not {r["question_id"] for r in shown} & {r["question_id"] for r in originals}
    assert [mapping[r["question_id"]] for r in shown] == [str(r["question_id"]) for r in originals]
    assert not keys_of(shown) & ANSWER_KEYS
