"""Messages an organizer and a team can act on (issue 16, part 5).

- an upload with problems in several datasets names every one of them (each with up to five
  question ids), on the web form one item per dataset, in the API one line per dataset;
- json's own wording is not doubled ("Unterminated string starting at at line 1");
- the phase selector of the upload forms shows phase names, not ``challenge/phase`` slugs;
- the submission page shows the board's labels ("Split II F1"), not raw keys;
- a "Split I F1" column where Split I is scored;
- an error is shown once on the web upload form.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from django.conf import settings

from leaderboard.rankings.selectors import board_build
from leaderboard.sandbox.answers_json import NotJson, answers_decode
from leaderboard.submissions.evaluation import submission_evaluate
from leaderboard.submissions.intake import submission_create_predictions
from leaderboard.submissions.models import Score, Status
from tests.builders.cast import Cast, gold_predictions, upload
from tests.builders.uploads import CHANNELS, first_qids, post, zip_of


def form_errors(page: str) -> list[str]:
    """The items of the upload form's error list (errors not tied to a field)."""
    block = re.search(r'<ul class="errorlist nonfield">(.*?)</ul>', page, re.S)
    return [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>", block.group(1), re.S)] if block else []


def two_bad_datasets() -> bytes:
    preds = gold_predictions()
    for qid in first_qids(7):
        del preds["squad"][qid]
    preds["xquad-en"]["bogus-1"] = "x"
    preds["xquad-en"]["bogus-2"] = "y"
    return json.dumps(preds).encode()


@pytest.mark.parametrize("channel", CHANNELS)
def test_an_upload_with_problems_in_two_datasets_names_both(cast: Cast, channel: str) -> None:
    outcome = post(cast, channel, two_bad_datasets())
    assert outcome.status == 400
    squad = "preds.json [squad]: 7 question(s) have no prediction (e.g. " + ", ".join(map(repr, first_qids(5))) + ")"
    xquad = "preds.json [xquad-en]: 2 id(s) are not questions of this dataset (e.g. 'bogus-1', 'bogus-2')"
    if channel == "web":
        # One item per dataset, each once.
        assert form_errors(outcome.message) == [squad, xquad]
        assert outcome.message.count("7 question(s) have no prediction") == 1
    else:
        assert outcome.message == f"{squad}\n{xquad}"
    assert repr(first_qids(6)[5]) not in outcome.message  # five examples at most


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_missing_dataset_is_named_with_the_other_datasets_problems(cast: Cast, channel: str) -> None:
    squad = gold_predictions()["squad"]
    del squad[first_qids(1)[0]]
    outcome = post(cast, channel, json.dumps({"squad": squad}).encode())
    assert outcome.status == 400
    assert "preds.json: no predictions for dataset(s) xquad-en" in outcome.message
    assert "preds.json [squad]: 1 question(s) have no prediction" in outcome.message


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_zip_with_two_broken_members_names_both(cast: Cast, channel: str) -> None:
    content = zip_of({"squad.json": '{"q": "a",}', "xquad-en.json": '{"q": "b"', "newsqa.json": "{}"})
    outcome = post(cast, channel, content, name="preds.zip")
    assert outcome.status == 400
    for fragment in ("preds.zip:squad.json: not valid JSON: Expecting property name",
                     "preds.zip:xquad-en.json: not valid JSON: Expecting ',' delimiter",
                     "preds.zip: unknown dataset 'newsqa'"):
        assert outcome.message.count(fragment) == 1, (fragment, outcome.message[-2000:])


def test_jsons_own_wording_is_not_doubled(monkeypatch: pytest.MonkeyPatch) -> None:
    """json's messages end in "at" ("Unterminated string starting at"); " at line 1" must not follow them."""
    def loads(text: str) -> object:
        raise json.JSONDecodeError("Unterminated string starting at", text, 0)

    monkeypatch.setattr("leaderboard.sandbox.answers_json.json.loads", loads)  # the json module it reads with
    with pytest.raises(NotJson) as caught:
        answers_decode(b'{"q1": "a\\u00e9"}', where="p.json", qids=["q1"])
    assert caught.value.message == "p.json: not valid JSON: Unterminated string starting at line 1, column 8"


@pytest.mark.parametrize("raw", [b'{"q1": "abc', b'{"q1": "a\x01"}', b'{"q1": "\\u12"}', b'{"q1": "\\x"}'])
def test_no_json_message_says_at_twice(raw: bytes) -> None:
    with pytest.raises(NotJson) as caught:
        answers_decode(raw, where="p.json", qids=["q1"])
    assert " at at " not in caught.value.message and caught.value.message.count(" at line ") == 1


@pytest.mark.parametrize("url", ["/c/demo/submit/", "/c/demo/submit/system/"])
def test_the_phase_selector_shows_phase_names(cast: Cast, url: str) -> None:
    for phase in (cast.dev, cast.test):  # both take both kinds: each form lists both
        phase.allowed_kinds = ["predictions", "docker_image"]
        phase.save()
    page = cast.client("alice").get(url).content.decode()
    options = re.findall(r'<option value="\d+"[^>]*>([^<]*)</option>', page)
    assert options == ["Dev", "Test"]
    assert "demo/dev" not in page and "demo/test" not in page


@pytest.fixture
def scored_dev(cast: Cast):  # type: ignore[no-untyped-def]
    submission = submission_create_predictions(
        team=cast.alpha, phase=cast.dev, user=cast.alice, upload=upload(gold_predictions(wrong_every=4)),
        limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES,
    )
    submission_evaluate(submission.pk)
    submission.refresh_from_db()
    assert submission.status == Status.FINISHED, submission.failure_reason
    return submission


def test_the_submission_page_uses_the_boards_labels(cast: Cast, scored_dev) -> None:  # type: ignore[no-untyped-def]
    page = cast.client("alice").get(f"/c/demo/submissions/{scored_dev.pk}/").content.decode()
    table = page[page.index('id="scores"'):page.index("</table>", page.index('id="scores"'))]
    cells = re.findall(r'<tr><td>([^<]*)</td><td title="([^"]*)">([^<]*)</td>', table)
    shown = [(dataset, label) for dataset, _, label in cells]
    # Aggregates first, in the board's column order, then each dataset's columns.
    assert shown == [
        ("Overall", "Macro F1"), ("Overall", "Macro EM"), ("Overall", "Split I F1"), ("Overall", "Split II F1"),
        ("Overall", "Split I EM"), ("Overall", "Split II EM"),
        ("SQuAD", "F1"), ("SQuAD", "EM"), ("XQuAD-en", "F1"), ("XQuAD-en", "EM"),
    ]
    assert all(label != key for _, key, label in cells)  # the raw key only in the tooltip
    assert ">split_II_macro_f1<" not in page
    api = cast.client("alice").get(f"/api/v1/submissions/{scored_dev.pk}/").json()
    assert {(s["metric"], s["label"]) for s in api["scores"] if s["dataset"] == "Overall"} >= {
        ("split_II_macro_f1", "Split II F1"), ("split_I_macro_em", "Split I EM")
    }


def test_a_split_i_column_is_shown_where_split_i_is_scored(cast: Cast, scored_dev) -> None:  # type: ignore[no-untyped-def]
    board = board_build(phase=cast.dev, viewer=cast.dave)
    labels = [c.label for c in board.columns if c.group == "Overall"]
    assert labels == ["Macro F1", "Macro EM", "Split I F1", "Split II F1"]
    squad_f1 = Score.objects.get(submission=scored_dev, dataset__slug="squad", metric="f1").value
    assert board.rows[0].values["agg:split_I_macro_f1"] == pytest.approx(squad_f1)
    assert "Split I F1" in cast.client(None).get("/c/demo/board/dev/").content.decode()
    # The test phase scores no Split I dataset: no such column there.
    assert "Split I F1" not in [c.label for c in board_build(phase=cast.test, viewer=cast.dave).columns]


@pytest.mark.parametrize(("data", "error"), [
    ({"file": "broken"}, "p.json: not valid JSON: Expecting property name enclosed in double quotes at line 1"),
    ({"file": "two"}, "preds.json [squad]: 7 question(s) have no prediction"),
    ({}, "This field is required."),
    ({"file": "empty"}, "The submitted file is empty."),
])
def test_an_error_is_shown_once_on_the_web_upload_form(cast: Cast, data: dict, error: str) -> None:
    files = {"broken": upload("{oops", "p.json"), "two": upload(two_bad_datasets()), "empty": upload(b"", "e.json")}
    form = {"phase": cast.dev.pk, **({"file": files[data["file"]]} if "file" in data else {})}
    response = cast.client("alice").post("/c/demo/submit/", form)
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert page.count(error) == 1, page[page.index("<main>"):page.index("</main>")]


def test_an_error_is_shown_once_on_the_system_upload_form(cast: Cast) -> None:
    cast.test.allowed_kinds = ["docker_image", "code_bundle"]  # the form is offered, and Dev still takes prediction files only
    cast.test.save()
    response = cast.client("alice").post("/c/demo/submit/system/", {
        "phase": cast.dev.pk, "kind": "code_bundle", "file": upload(zip_of({"run.py": "print(1)"}), "b.zip"),
    })
    assert response.status_code == 400
    page = html.unescape(response.content.decode())
    assert form_errors(page) == ["The Dev phase takes prediction files, not code bundles."]
    assert page.count("not code bundles") == 1
