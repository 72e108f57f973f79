"""challenge_load refuses what would break a challenge later (issue 16, section 2), and a gold that
fails at scoring time is the organizers' fault, never the team's.

Each refusal names its cause; nothing is stored when a spec is refused.  The specs are built from
the committed demo data (deploy/demo/data), so nothing here needs ../shared.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from pytest_django import DjangoCaptureOnCommitCallbacks

from leaderboard.challenges.models import Challenge, DatasetFile
from leaderboard.challenges.selectors import dataset_label
from leaderboard.challenges.spec import SPEC_KEYS, SUITE_OPTIONS, Keys, SpecError, suite_options_of
from leaderboard.challenges.spec_reference import KEY_DOCS, key_rows, option_rows, shown_key
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites import mrqa as mrqa_suite
from leaderboard.challenges.suites.base import DatasetResult, NoOptions, SuiteOptions
from leaderboard.challenges.suites.mrc2018 import Mrc2018Options
from leaderboard.challenges.suites.mrqa import MrqaOptions
from leaderboard.challenges.suites.quac import QuacOptions
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.evaluation import submission_evaluate, submission_run_finish
from leaderboard.submissions.intake import submission_create_predictions, submission_create_system
from leaderboard.submissions.lifecycle import submission_run_claim
from leaderboard.submissions.models import FailureCause, ScoreHistory, Status, Submission, Verdict
from leaderboard.submissions.reload import challenge_load, dataset_gold_replace
from leaderboard.submissions.selectors import quota_usage, submission_run_report
from scoring.errors import ScoringError
from tests.builders.cast import DEMO_DATA, REPO, Cast, gold_predictions, upload
from tests.builders.runs import bundle, gold_outputs, outcome
from tests.builders.suites import coqa_gold, quac_gold, squad2_gold
from tests.builders.systems import system_phases

MRQA = DEMO_DATA / "mrqa"

BASE: dict[str, Any] = {
    "slug": "checked",
    "title": "Checked",
    "metric_suite": "mrqa",
    "phases": [
        {"slug": "dev", "name": "Dev", "kind": "dev", "portion": "dev", "opens_at": "2020-01-01T00:00:00Z",
         "closes_at": "2099-01-01T00:00:00Z", "quota": {"per_day": 5}, "allowed_kinds": ["predictions"]},
        {"slug": "test", "name": "Test", "kind": "test", "portion": "test", "opens_at": "2020-01-01T00:00:00Z",
         "closes_at": "2099-01-01T00:00:00Z", "allowed_kinds": ["docker_image", "code_bundle"]},
    ],
    "datasets": [
        {"slug": "squad", "name": "SQuAD", "split": "I", "files": {"dev": str(MRQA / "SQuAD.dev.jsonl.gz")}},
        {"slug": "xquad-en", "name": "XQuAD-en", "split": "II",
         "files": {"dev": str(MRQA / "XQuAD-en.dev.jsonl.gz"), "test": str(MRQA / "XQuAD-en.test.jsonl.gz")}},
        {"slug": "coqa", "name": "CoQA", "split": "III", "files": {"test": str(MRQA / "CoQA.test.jsonl.gz")}},
    ],
}


def load(tmp_path: Path, change: Callable[[dict[str, Any]], object] = lambda spec: None) -> Challenge:
    spec = copy.deepcopy(BASE)
    change(spec)
    path = tmp_path / "checked.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return challenge_load(spec_path=path)


def refused(tmp_path: Path, change: Callable[[dict[str, Any]], object], *fragments: str,
            error: type[Exception] = SpecError) -> str:
    """The load fails naming every fragment, and leaves nothing behind."""
    with pytest.raises(error) as caught:
        load(tmp_path, change)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    assert not Challenge.objects.filter(slug="checked").exists()
    assert not DatasetFile.objects.exists()
    return message


def mrqa_lines(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress((MRQA / name).read_bytes()).decode().splitlines()]


def write_mrqa(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_bytes(gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode()))
    return path


def set_file(index: int, portion: str, path: Path | str) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        spec["datasets"][index]["files"][portion] = str(path)
    return change


pytestmark = pytest.mark.django_db


def test_the_base_spec_loads(tmp_path: Path) -> None:
    challenge = load(tmp_path)
    assert DatasetFile.objects.filter(dataset__challenge=challenge).count() == 4


@pytest.mark.parametrize("path", sorted((REPO / "deploy" / "demo").glob("*.yaml")), ids=lambda p: p.name)
def test_every_demo_spec_still_loads(path: Path) -> None:
    User.objects.create_user("organizer")
    challenge = challenge_load(spec_path=path)
    assert challenge.datasets.exists() and challenge.phases.exists()


# --------------------------------------------------------------------------- unknown keys


def put(where: Callable[[dict[str, Any]], dict[str, Any]], key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        where(spec)[key] = value
    return change


def rename(where: Callable[[dict[str, Any]], dict[str, Any]], old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(spec: dict[str, Any]) -> None:
        mapping = where(spec)
        mapping[new] = mapping.pop(old)
    return change


def top(spec: dict[str, Any]) -> dict[str, Any]:
    return spec


@pytest.mark.parametrize(("change", "message"), [
    (rename(lambda s: s["datasets"][1], "files", "file"), "checked.datasets[1]: unknown key 'file'; did you mean 'files'?"),
    (put(top, "titel", "x"), "checked: unknown key 'titel'; did you mean 'title'?"),
    (put(top, "sealed_aggregate", "all"), "checked: unknown key 'sealed_aggregate'; did you mean 'sealed_aggregates'?"),
    (put(top, "colour", "red"), "checked: unknown key 'colour'; the keys here are slug, title, description"),
    (rename(lambda s: s["phases"][1], "closes_at", "closes"), "checked.phases[1]: unknown key 'closes'; did you mean"),
    (put(lambda s: s["phases"][0], "quota", {"per_dya": 3}),
     "checked.phases[0].quota: unknown key 'per_dya'; did you mean 'per_day'?"),
    (put(lambda s: s["datasets"][2], "revealed_at", True),
     "checked.datasets[2]: unknown key 'revealed_at'; did you mean 'revealed'?"),
    (rename(lambda s: s["datasets"][1]["files"], "test", "tests"),
     "checked.datasets[1].files: unknown key 'tests'; did you mean 'test'?"),
    (put(top, "ranking", {"split": ["II", "III"]}), "checked.ranking: unknown key 'split'; did you mean 'splits'?"),
    (put(top, "systems", {"limits": {"memory": 512}}),
     "checked.systems.limits: unknown key 'memory'; did you mean 'memory_mb'?"),
    (put(top, "systems", {"storage_mb": 100}),
     "checked.systems: unknown key 'storage_mb'; did you mean 'storage_mb_per_team'?"),
    (put(top, "suite_options", {"tokenisation": "cjk"}),
     "checked.suite_options: unknown option 'tokenisation'; did you mean 'tokenization'?"),
    (put(top, "suite_options", {"tokenization": "cjkk"}),
     "checked.suite_options.tokenization: 'cjkk' is not one of whitespace, cjk; did you mean 'cjk'?"),
])
def test_an_unknown_key_anywhere_is_refused_with_the_nearest_valid_one(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    refused(tmp_path, change, message)


@pytest.mark.parametrize(("suite", "options", "message"), [
    ("mrc2018", {"alhpa": 2}, "unknown option 'alhpa'; did you mean 'alpha'? (the mrc2018 suite takes alpha, beta"),
    ("mrc2018", {"beta": -1}, "checked.suite_options.beta: expected a number at least 0, found -1"),
    ("mrc2018", {"lic2019_guards": "yes"}, "checked.suite_options.lic2019_guards: expected true or false"),
    ("quac", {"min_f1": 40}, "checked.suite_options.min_f1: expected a number between 0 and 1, found 40"),
    ("squad2", {"alpha": 1.0}, "unknown option 'alpha' (the squad2 suite takes none)"),
    ("coqa", {"min_f1": 0.4}, "unknown option 'min_f1' (the coqa suite takes none)"),
])
def test_suite_options_are_checked_against_the_suite(tmp_path: Path, suite: str, options: dict, message: str) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec.update(metric_suite=suite, suite_options=options)
        for ds in spec["datasets"]:
            ds["portions"] = list(ds.pop("files"))  # refused before any file would be read

    refused(tmp_path, change, message)


def test_every_suite_has_its_options_listed() -> None:
    assert set(SUITE_OPTIONS) == set(SUITES)


def test_a_loaded_challenge_s_options_are_the_suite_s_dataclass_with_its_defaults() -> None:
    # Stored as the spec gave them; whatever the spec left out is the dataclass's default, written once.
    assert suite_options_of(Challenge(slug="c", metric_suite="mrc2018", suite_options={"alpha": 2})) == \
        Mrc2018Options(alpha=2.0, beta=1.0, lic2019_guards=True)
    assert suite_options_of(Challenge(slug="c", metric_suite="quac", suite_options={})) == QuacOptions()
    mrqa_options = suite_options_of(Challenge(slug="c", metric_suite="mrqa", suite_options={}))
    assert isinstance(mrqa_options, MrqaOptions) and mrqa_options.tokenization == "whitespace"
    assert isinstance(suite_options_of(Challenge(slug="c", metric_suite="coqa", suite_options={})), NoOptions)


def test_a_suite_refuses_another_suite_s_options() -> None:
    with pytest.raises(TypeError, match="expected QuacOptions, found MrqaOptions"):
        SUITES["quac"].score("unread.json", {}, MrqaOptions())


def test_a_key_given_twice_is_refused_not_silently_dropped(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE, sort_keys=False, default_flow_style=False)
    text = text.replace("title: Checked\n", "title: Checked\ntitle: Other\n")
    path = tmp_path / "twice.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=r"twice\.yaml, line 3: key 'title' is given twice in one mapping "
                                        r"\(first on line 2\); YAML would silently keep the last"):
        challenge_load(spec_path=path)
    assert not Challenge.objects.exists()


def test_a_key_given_twice_in_a_flow_mapping_is_refused_too(tmp_path: Path) -> None:
    text = yaml.safe_dump(BASE, sort_keys=False, default_flow_style=None, width=10_000)
    squad_dev = str(MRQA / "SQuAD.dev.jsonl.gz")
    text = text.replace(f"files: {{dev: {squad_dev}}}", f"files: {{dev: {squad_dev}, dev: {squad_dev}}}", 1)
    path = tmp_path / "twice.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match="key 'dev' is given twice in one mapping"):
        challenge_load(spec_path=path)


def test_yaml_merge_keys_may_override_what_they_merge(tmp_path: Path) -> None:
    text = yaml.safe_dump({k: v for k, v in BASE.items() if k != "phases"}, sort_keys=False)
    path = tmp_path / "merge.yaml"
    path.write_text(text + """phases:
  - &dev {slug: dev, name: Dev, kind: dev, portion: dev, opens_at: 2020-01-01T00:00:00Z,
          closes_at: 2099-01-01T00:00:00Z, allowed_kinds: [predictions]}
  - <<: *dev
    slug: test
    name: Test
    kind: test
    portion: test
    allowed_kinds: [docker_image]
""", encoding="utf-8")
    challenge = challenge_load(spec_path=path)
    assert [(p.slug, p.portion) for p in challenge.phases.order_by("order")] == [("dev", "dev"), ("test", "test")]


# --------------------------------------------------------------------------- duplicates, Split III


def test_two_datasets_with_one_slug_are_refused(tmp_path: Path) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["datasets"].append({"slug": "squad", "name": "SQuAD v2", "split": "II",
                                 "files": {"dev": str(MRQA / "SQuAD.dev.jsonl.gz")}})

    refused(tmp_path, change, "checked.datasets[3]: slug 'squad' is also datasets[0]'s; two datasets with one slug "
                              "would be merged into one")


def test_two_datasets_answering_to_one_name_are_refused(tmp_path: Path) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["datasets"][1]["name"] = "squad"

    refused(tmp_path, change, "checked.datasets[1]: 'squad' also names datasets[0]")


def test_two_phases_with_one_slug_are_refused(tmp_path: Path) -> None:
    refused(tmp_path, lambda spec: spec["phases"][1].update(slug="dev"),
            "checked.phases[1]: slug 'dev' is also phases[0]'s")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda spec: spec.update(title="T" * 201), "checked.title: 201 characters, longer than the 200"),
        (lambda spec: spec["phases"][0].update(name="D" * 101), "checked.phases[0].name: 101 characters"),
        (lambda spec: spec["datasets"][1].update(name="X" * 101), "checked.datasets[1].name: 101 characters"),
        (lambda spec: spec["datasets"][2].update(sealed_alias="H" * 41), "checked.datasets[2].sealed_alias: 41"),
    ],
)
def test_text_longer_than_its_column_is_refused_on_any_database(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], message: str
) -> None:
    # SQLite would store it whole, PostgreSQL refuse it halfway through the load.
    refused(tmp_path, change, message)


@pytest.mark.parametrize("how", ["files", "portions"])
def test_a_split_iii_dataset_with_a_dev_portion_is_refused(tmp_path: Path, how: str) -> None:
    def change(spec: dict[str, Any]) -> None:
        coqa = spec["datasets"][2]
        if how == "files":
            coqa["files"]["dev"] = str(MRQA / "CoQA.dev.jsonl.gz")
        else:
            coqa["portions"] = ["dev", "test"]

    refused(tmp_path, change, "checked.datasets[2]: a Split III dataset has no dev portion", "make it Split II")


# --------------------------------------------------------------------------- MRQA headers


def test_a_header_naming_another_dataset_is_refused(tmp_path: Path) -> None:
    refused(tmp_path, set_file(1, "dev", MRQA / "SQuAD.dev.jsonl.gz"),
            "checked.datasets[1].files.dev (SQuAD.dev.jsonl.gz): the file's header names dataset 'SQuAD', but the "
            "spec gives it to 'XQuAD-en' (slug 'xquad-en')")


def test_a_test_file_given_as_a_dev_portion_is_refused(tmp_path: Path) -> None:
    refused(tmp_path, set_file(1, "dev", MRQA / "XQuAD-en.test.jsonl.gz"),
            "the file's header says split 'test', but the spec gives it as the dev portion (a dev portion is "
            "downloaded by teams, with its answers)")


def test_a_training_file_given_as_a_scored_portion_is_refused(tmp_path: Path) -> None:
    refused(tmp_path, set_file(0, "dev", MRQA / "SQuAD.train.jsonl.gz"),
            "the file's header says split 'train', but the spec gives it as the dev portion")


def test_headers_are_read_leniently_where_real_files_differ(tmp_path: Path) -> None:
    """An official dev set as a hidden test portion (MRQA's files all say "dev"), a header-less
    file, and a header that names the dataset as the spec does up to case and punctuation."""
    headerless = write_mrqa(tmp_path / "xquad-test.jsonl.gz", mrqa_lines("XQuAD-en.test.jsonl.gz")[1:])

    def change(spec: dict[str, Any]) -> None:
        spec["datasets"][0]["files"]["test"] = str(MRQA / "SQuAD.dev.jsonl.gz")  # "dev" file, test portion
        spec["datasets"][1]["files"]["test"] = str(headerless)
        spec["datasets"].append({"slug": "duorc-selfrc", "name": "DuoRC SelfRC", "split": "II",
                                 "files": {"dev": str(MRQA / "DuoRC.SelfRC.dev.jsonl.gz")}})  # "DuoRC.SelfRC"

    challenge = load(tmp_path, change)
    assert DatasetFile.objects.filter(dataset__challenge=challenge).count() == 6


# --------------------------------------------------------------------------- other formats given as MRQA


SQUAD_V1 = {"version": "1.1", "data": [{"title": "Normans", "paragraphs": [{
    "context": "The Normans gave their name to Normandy, a region in France.",
    "qas": [{"id": "q1", "question": "Where is Normandy?", "answers": [{"text": "France", "answer_start": 52}]}],
}]}]}


@pytest.mark.parametrize(("document", "indent", "what", "how"), [
    (SQUAD_V1, 2, "this is a SQuAD 1.1 JSON file, not MRQA JSON lines. Convert it: a first line", '"qid": its id'),
    (SQUAD_V1, None, "this is a SQuAD 1.1 JSON file, not MRQA JSON lines", "(docs/organizers/data.md)"),
    (squad2_gold(), None, "this is a SQuAD 2.0 JSON file, not MRQA JSON lines", "or use metric_suite: squad2"),
    (quac_gold(), 1, "this is a QuAC JSON file, not MRQA JSON lines", "takes metric_suite: quac"),
    (coqa_gold(), None, "this is a CoQA JSON file, not MRQA JSON lines", "takes metric_suite: coqa"),
])
def test_another_benchmarks_file_given_as_mrqa_gold_is_named_with_how_to_convert_it(
    tmp_path: Path, document: dict, indent: int | None, what: str, how: str
) -> None:
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(document, indent=indent), encoding="utf-8")
    message = refused(tmp_path, set_file(1, "dev", path), "gold file for xquad-en (dev) rejected: dev-v1.1.json: ",
                      what, how, error=ServiceError)
    assert "Expecting property name" not in message and "'qas' list" not in message


# --------------------------------------------------------------------------- the gold scored against itself


def xquad_dev_with(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> tuple[Path, str, int]:
    """XQuAD-en dev with the first question of its second context changed: the file, that qid, its line."""
    lines = mrqa_lines("XQuAD-en.dev.jsonl.gz")
    qa = lines[2]["qas"][0]
    change(qa)
    return write_mrqa(tmp_path / "XQuAD-en.dev.jsonl.gz", lines), qa["qid"], 3


@pytest.mark.parametrize(("answers", "cause"), [
    ([], "the gold's own answers cannot be scored, so every submission would fail: the question has no gold "
         "answer to score against"),
    (["the", "."], "no gold answer of this question gets 100 against itself ('the', '.': the last gets EM 100, F1 0)"),
])
def test_a_gold_question_that_cannot_score_is_refused_naming_file_line_and_id(
    tmp_path: Path, answers: list[str], cause: str
) -> None:
    path, qid, line = xquad_dev_with(tmp_path, lambda qa: qa.update(answers=answers))
    refused(tmp_path, set_file(1, "dev", path),
            f"gold file for xquad-en (dev) rejected: XQuAD-en.dev.jsonl.gz, line {line}, id {qid!r}: {cause}",
            error=ServiceError)


def test_a_degenerate_answer_beside_a_good_one_is_accepted_as_the_metric_takes_the_best(tmp_path: Path) -> None:
    path, _, _ = xquad_dev_with(tmp_path, lambda qa: qa.update(answers=["the", *qa["answers"]]))
    load(tmp_path, set_file(1, "dev", path))


def test_training_files_are_not_scored_so_not_self_checked(tmp_path: Path) -> None:
    lines = mrqa_lines("SQuAD.train.jsonl.gz")
    lines[1]["qas"][0]["answers"] = []
    train = write_mrqa(tmp_path / "SQuAD.train.jsonl.gz", lines)
    challenge = load(tmp_path, set_file(0, "train", train))
    assert challenge.datasets.get(slug="squad").files.filter(portion="train").exists()


def mrc2018_lines() -> list[dict[str, Any]]:
    text = (DEMO_DATA / "dureader" / "search.dev.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def encode_lines(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def quac_disagreeing() -> dict[str, Any]:
    gold = quac_gold()
    for article in gold["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                context = paragraph["context"]
                qa["answers"] = [{"text": context[:20], "answer_start": 0}, {"text": context[40:60], "answer_start": 40}]
                qa["orig_answer"] = qa["answers"][0]
    return gold


# Each suite's gold in its own format: a clean one (passes), and defects the suite finds only by
# scoring.  SQuAD 2.0 and CoQA have none that their strict loaders let through (an answer that
# normalises to nothing counts as no answer there), so their refusal is shown through a scorer
# that refuses (test below).
GOLDS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "mrqa": ("XQuAD-en.dev.jsonl.gz", lambda: (MRQA / "XQuAD-en.dev.jsonl.gz").read_bytes()),
    "mrc2018": ("search.dev.jsonl", lambda: encode_lines(mrc2018_lines())),
    "squad2": ("dev-v2.0.json", lambda: json.dumps(squad2_gold()).encode()),
    "quac": ("val_v0.2.json", lambda: json.dumps(quac_gold()).encode()),
    "coqa": ("coqa-dev-v1.0.json", lambda: json.dumps(coqa_gold()).encode()),
}


def with_changed(lines: list[dict[str, Any]], change: Callable[[list[dict[str, Any]]], object]) -> bytes:
    change(lines)
    return encode_lines(lines)


DEFECTS: list[tuple[str, str, Callable[[], bytes], SuiteOptions, str]] = [
    ("mrqa", "g.jsonl.gz", lambda: gzip.compress(encode_lines([
        {"header": {"dataset": "X", "split": "dev"}},
        {"id": "c1", "context": "a b", "qas": [{"qid": "q1", "question": "?", "answers": ["a"]},
                                               {"qid": "q2", "question": "?", "answers": []}]}])),
     MrqaOptions(), "g.jsonl.gz, line 2, id 'q2': the gold's own answers cannot be scored"),
    ("mrc2018", "search.test.jsonl",
     lambda: with_changed(mrc2018_lines(), lambda ls: [line.update(answers=[]) for line in ls]), Mrc2018Options(),
     "search.test.jsonl: the gold's own answers cannot be scored, so every submission would fail: no reference "
     "question has an answer"),
    ("mrc2018", "search.dev.jsonl", lambda: with_changed(mrc2018_lines(), lambda ls: ls[3].update(answers=[""])),
     Mrc2018Options(),
     "search.dev.jsonl, line 4, id '181575': no gold answer of this question gets 100 against itself"),
    ("quac", "val.json", lambda: json.dumps(quac_disagreeing()).encode(), QuacOptions(min_f1=1.0),
     "val.json: scored against its own answers with these suite options, the file's F1 is undefined"),
]


@pytest.mark.parametrize("key", list(GOLDS))
def test_each_suites_clean_gold_passes_its_self_check(key: str) -> None:
    name, make = GOLDS[key]
    info = SUITES[key].inspect_gold(make(), filename=name, self_check=SUITES[key].options_type())
    assert info.qids


@pytest.mark.parametrize(("key", "name", "make", "options", "message"), DEFECTS,
                         ids=[f"{d[0]}-{i}" for i, d in enumerate(DEFECTS)])
def test_a_gold_the_suite_cannot_score_is_refused(key: str, name: str, make: Callable[[], bytes],
                                                  options: SuiteOptions, message: str) -> None:
    with pytest.raises(ScoringError) as caught:
        SUITES[key].inspect_gold(make(), filename=name, self_check=options)
    assert message in str(caught.value)
    assert "/tmp" not in str(caught.value)
    # Without the self-check (a training file) the same bytes pass the structural checks.
    SUITES[key].inspect_gold(make(), filename=name)


@pytest.mark.parametrize("key", list(GOLDS))
def test_every_suite_refuses_a_gold_its_scorer_refuses_naming_file_and_id(
    key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, make = GOLDS[key]
    suite = SUITES[key]
    qids = suite.inspect_gold(make(), filename=name).qids
    seen: list[dict[str, Any]] = []

    def score(gold_path: str, predictions: Any, options: Any) -> DatasetResult:
        seen.append(dict(predictions))
        raise ScoringError("the scorer refuses this question", path=gold_path, qid=qids[-1])

    monkeypatch.setattr(suite, "score", score)
    with pytest.raises(ScoringError) as caught:
        suite.inspect_gold(make(), filename=name, self_check=suite.options_type())
    message = str(caught.value)
    assert message.startswith(f"{name}") and f"id {qids[-1]!r}" in message, message
    assert "the gold's own answers cannot be scored" in message and "the scorer refuses this question" in message
    assert seen and set(seen[0]) == set(qids)  # every question answered, as an upload must


def test_the_self_check_leaves_no_parsed_copy_behind() -> None:
    SUITES["mrqa"].inspect_gold(GOLDS["mrqa"][1](), filename="x.jsonl.gz", self_check=MrqaOptions())
    # gold_cache is typed as the function it wraps; it is an lru_cache.
    cache = mrqa_suite._mrqa_gold
    assert isinstance(cache, functools._lru_cache_wrapper)
    assert cache.cache_info().currsize == 0


# --------------------------------------------------------------------------- a gold failure at scoring time


def break_gold(dataset_file: DatasetFile) -> str:
    """Rewrite a stored gold as one loaded before the self-check existed could be: the first
    question without an answer.  Returns that question's id."""
    path = Path(dataset_file.gold.path)
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    lines[1]["qas"][0]["answers"] = []
    write_mrqa(path, lines)
    return str(lines[1]["qas"][0]["qid"])


def team_and_organizer_views(cast: Cast, pk: int) -> tuple[str, str]:
    alice, oscar = cast.client("alice"), cast.client("oscar")
    team = "\n".join(alice.get(url).content.decode() for url in (
        f"/c/demo/submissions/{pk}/", "/c/demo/submissions/", f"/api/v1/submissions/{pk}/",
        "/api/v1/challenges/demo/submissions/", f"/c/demo/board/{Submission.objects.get(pk=pk).phase.slug}/",
    ))
    organizer = "\n".join(oscar.get(url).content.decode() for url in (
        f"/c/demo/submissions/{pk}/", f"/api/v1/submissions/{pk}/",
    ))
    return team, organizer


def test_a_gold_failure_on_a_prediction_file_is_the_organizers_never_the_teams(cast: Cast) -> None:
    cast.oscar.email = "oscar@example.org"
    cast.oscar.save()
    xquad = DatasetFile.objects.get(dataset__slug="xquad-en", portion="dev")
    submission = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                               upload=upload(gold_predictions("dev")),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    assert submission.status == Status.QUEUED  # scored by the worker, here by the call below
    qid = break_gold(xquad)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()

    assert submission.status == Status.FAILED
    assert (submission.failure_cause, submission.verdict) == (FailureCause.PLATFORM, Verdict.GOLD)
    assert submission.verdict_dataset == xquad.dataset
    assert quota_usage(team=cast.alpha, phase=cast.dev).used_total == 0
    assert xquad.gold.name is not None
    gold_file = Path(xquad.gold.name).name
    [alert] = mail.outbox
    assert alert.to == ["oscar@example.org"] and gold_file in alert.body and qid in alert.body

    team_sees, organizer_sees = team_and_organizer_views(cast, submission.pk)
    assert "Organizers&#x27; data error for dataset XQuAD-en (the platform&#x27;s fault: not counted against your " \
           "quota; the organizers have been told)." in team_sees
    assert "the organizers have been told" in cast.client("alice").get(
        f"/api/v1/submissions/{submission.pk}/").json()["failure_reason"]
    for secret in (gold_file, str(settings.PRIVATE_STORAGE_ROOT), qid, "no gold answer", "gold/"):
        assert secret not in team_sees, secret
    # The organizer reads the full error: which file, which question, why.
    assert gold_file in organizer_sees and qid in organizer_sees and "no gold answer" in organizer_sees


def test_a_gold_failure_names_its_dataset_to_the_team_on_a_prediction_file_and_on_a_run(cast: Cast) -> None:
    """Issue 23: both kinds score through one ladder (``evaluation.submission_score``), so a run that
    hits bad gold names the dataset it was scoring, as a prediction file always did."""
    system_phases(cast)
    predictions = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                                upload=upload(gold_predictions("dev")),
                                                limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    run = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                   kind="code_bundle")
    plan = submission_run_claim(run.pk, worker="host:1")
    assert plan is not None
    outputs = gold_outputs(plan)
    broken = {kind: DatasetFile.objects.get(dataset__slug="xquad-en", portion=portion)
              for kind, portion in (("predictions", "dev"), ("run", "test"))}
    for dataset_file in broken.values():
        break_gold(dataset_file)
    submission_evaluate(predictions.pk)
    submission_run_finish(run.pk, attempt=1, outcome=outcome(outputs=outputs))

    for kind, submission in (("predictions", predictions), ("run", run)):
        submission.refresh_from_db()
        assert (submission.status, submission.failure_cause, submission.verdict) == (
            Status.FAILED, FailureCause.PLATFORM, Verdict.GOLD), (kind, submission.failure_reason)
        assert submission.verdict_dataset == broken[kind].dataset, kind
        assert submission_run_report(submission=submission, is_organizer=False).reason == (
            "Organizers' data error for dataset XQuAD-en (the platform's fault: not counted against your quota; "
            "the organizers have been told)."), kind


def test_a_submission_that_failed_on_bad_gold_is_evaluated_again_once_the_gold_is_fixed(
    cast: Cast, django_capture_on_commit_callbacks: DjangoCaptureOnCommitCallbacks,
) -> None:
    """Issue 16: the failure was the organizers'; fixing the gold (a reload) evaluates it again, and
    its history keeps the failure."""
    xquad = DatasetFile.objects.get(dataset__slug="xquad-en", portion="dev")
    # The fixed file, as an organizer would upload it (new bytes; break_gold below edits the stored one).
    good = gzip.compress(gzip.decompress(Path(xquad.gold.path).read_bytes()), mtime=1)
    submission = submission_create_predictions(team=cast.alpha, phase=cast.dev, user=cast.alice,
                                               upload=upload(gold_predictions("dev")),
                                               limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES)
    break_gold(xquad)
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.verdict) == (Status.FAILED, Verdict.GOLD)
    with django_capture_on_commit_callbacks(execute=True):
        dataset_gold_replace(dataset=xquad.dataset, portion="dev", content=good, filename="XQuAD-en.dev.jsonl.gz")
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED and submission.verdict != Verdict.GOLD, submission.failure_reason
    [history] = ScoreHistory.objects.filter(submission=submission)
    assert "the gold it failed on was replaced" in history.reason and "no gold answer" in history.reason


def test_a_gold_failure_on_a_sealed_dataset_never_names_it_to_the_team(cast: Cast) -> None:
    system_phases(cast)
    queued = submission_create_system(team=cast.alpha, phase=cast.test, user=cast.alice, upload=bundle(),
                                      kind="code_bundle")
    plan = submission_run_claim(queued.pk, worker="host:1")
    assert plan is not None
    outputs = gold_outputs(plan)
    coqa = DatasetFile.objects.get(dataset__slug="coqa", portion="test")
    break_gold(coqa)
    submission_run_finish(queued.pk, attempt=1, outcome=outcome(outputs=outputs))
    queued.refresh_from_db()
    assert (queued.status, queued.failure_cause, queued.verdict) == (Status.FAILED, FailureCause.PLATFORM,
                                                                     Verdict.GOLD)
    assert "coqa" in queued.failure_reason  # the organizers' full reason names the gold file
    team_sees, organizer_sees = team_and_organizer_views(cast, queued.pk)
    # Named by its public alias (issue 23: a run names the dataset of a gold failure, as a file does).
    alias = dataset_label(coqa.dataset, reveal_sealed=False)
    assert f"Organizers&#x27; data error for dataset {alias} (the platform&#x27;s fault: not counted against your " \
           "quota; the organizers have been told)." in team_sees
    assert not re.search("coqa", team_sees, re.IGNORECASE)
    assert coqa.gold.name is not None and Path(coqa.gold.name).name in organizer_sees


# --------------------------------------------------------------------------- the organizer's guide


def dotted(keys: Keys, prefix: str = "") -> list[str]:
    out = []
    for key, nested in keys.items():
        out.append(prefix + key)
        if nested is not None:
            out += dotted(nested, f"{prefix}{key}.")
    return out


def test_the_reference_documents_every_spec_key_and_suite_option() -> None:
    """Each key has a row (``phases[].quota``), or is named in its parent's (``per_day`` in the quota row);
    every suite option has one (from its dataclass).  The organizers' page is these rows
    (``tests/test_docs.py`` keeps it current)."""
    rows = {key: f"{meaning} | {default}" for key, meaning, default in key_rows()}
    missing = []
    for name in dotted(SPEC_KEYS):
        shown, parent = shown_key(name), shown_key(name.rpartition(".")[0])
        leaf = name.rpartition(".")[2]
        if shown not in rows and not (parent in rows and re.search(rf"`[^`]*\b{leaf}\b[^`]*`", rows[parent])):
            missing.append(shown)
    assert not missing, f"the spec reference (challenges/spec_reference.py) lacks {missing}"
    assert not set(KEY_DOCS) - set(map(shown_key, dotted(SPEC_KEYS))), "a documented key the spec does not take"
    options = {(suite, option) for suite, kind in SUITE_OPTIONS.items() for option in kind.__dataclass_fields__}
    assert {(suite, option) for suite, option, _, _ in option_rows()} == options


@pytest.mark.parametrize(("systems", "message"), [
    ({"queue": "control"}, "checked.systems: queue must be a name of lower-case letters"),
    ({"queue": "GPU big"}, "not 'GPU big'"),
    ({"gpus": -1}, "checked.systems: gpus must be a whole number of GPUs per run (0 for none), not -1"),
    ({"gpus": True}, "gpus must be a whole number"),
    ({"max_running_per_team": 0}, "checked.systems: max_running_per_team must be a positive whole number, not 0"),
])
def test_a_run_queue_gpus_or_team_limit_that_cannot_work_is_refused(
    tmp_path: Path, systems: dict[str, Any], message: str
) -> None:
    refused(tmp_path, put(top, "systems", systems), message)


# --------------------------------------------------------------------------- the interactive protocol (issue 11)


def quac_spec(tmp_path: Path, protocol: Any) -> Callable[[dict[str, Any]], None]:
    gold = tmp_path / "val_v0.2.json"
    gold.write_text(json.dumps(quac_gold()))

    def change(spec: dict[str, Any]) -> None:
        spec["metric_suite"] = "quac"
        spec["phases"][1]["protocol"] = protocol
        spec["datasets"] = [{"slug": "quac", "name": "QuAC", "split": "II", "files": {"test": str(gold)}}]
    return change


def test_a_phase_runs_its_systems_in_the_protocol_modes_its_spec_names(tmp_path: Path) -> None:
    challenge = load(tmp_path, quac_spec(tmp_path, ["gold", "own", "adversarial"]))
    assert challenge.phases.get(slug="test").protocol_modes == ["gold", "own", "adversarial"]
    assert challenge.phases.get(slug="dev").protocol_modes == []


@pytest.mark.parametrize(("protocol", "suite", "kinds", "message"), [
    (["gold", "own"], "mrqa", None, "checked.phases[1].protocol: mrqa questions stand alone, so they are asked one "
                                    "per request: protocol: [single]"),
    (["single"], "mrc2018", None, "checked.phases[1].protocol: the interactive protocol runs dialogs (or single "
                                  "questions), and this challenge's metric suite 'mrc2018' has neither"),
    (["gold", "teacher"], "quac", None, "checked.phases[1].protocol: 'teacher' is not one of gold, own, adversarial"),
    (["gold", "gold"], "quac", None, "expected a list of distinct modes (gold, own, adversarial, single)"),
    ("gold", "quac", None, "expected a list of distinct modes"),
    (["adversarial", "gold"], "quac", None, "the first mode ranks, and the adversarial history holds the current"),
    (["own"], "quac", ["predictions", "docker_image"], "a phase in the interactive protocol takes systems only"),
])
def test_a_protocol_a_phase_cannot_run_is_refused(tmp_path: Path, protocol: Any, suite: str, kinds: Any,
                                                  message: str) -> None:
    def change(spec: dict[str, Any]) -> None:
        quac_spec(tmp_path, protocol)(spec)
        if suite != "quac":
            spec.update(metric_suite=suite, datasets=BASE["datasets"])
        if kinds is not None:
            spec["phases"][1]["allowed_kinds"] = kinds
    refused(tmp_path, change, message)


def test_an_mrqa_phase_asks_its_questions_one_per_request(tmp_path: Path) -> None:
    def change(spec: dict[str, Any]) -> None:
        spec["phases"][1]["protocol"] = ["single"]
    assert load(tmp_path, change).phases.get(slug="test").protocol_modes == ["single"]
