"""Upload links, forms and refusals follow one rule: the kinds a phase takes (``phase_takes``)."""

from __future__ import annotations

import html
import json
import re

from tests.builders.cast import Cast, gold_predictions
from tests.builders.uploads import post


def preds_json() -> bytes:
    return json.dumps(gold_predictions("test")).encode("utf-8")


def _options(page: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    assert select is not None, page
    return re.findall(r'<option value="[^"]+"[^>]*>([^<]*)</option>', select.group(1))


def test_a_systems_only_challenge_offers_no_prediction_upload(cast: Cast) -> None:
    for phase in (cast.dev, cast.test):
        phase.allowed_kinds = ["docker_image", "code_bundle"]
        phase.save()
    alice = cast.client("alice")
    for url in ("/c/demo/", "/c/demo/team/"):
        page = alice.get(url).content.decode()
        assert "Submit predictions" not in page and "Submit a system" in page, url
    assert "Docker images or code bundles" in alice.get("/c/demo/").content.decode()  # the Accepts column
    # A link from elsewhere (a kit, a bookmark) lands on the form the challenge takes, saying why.
    response = alice.get("/c/demo/submit/", follow=True)
    assert response.redirect_chain[-1][0] == "/c/demo/submit/system/"
    page = html.unescape(response.content.decode())
    assert "Demo MRQA does not take prediction files: its phases take Docker images or code bundles." in page
    assert "Prediction files go" not in page


def test_the_prediction_form_lists_only_the_phases_that_take_prediction_files(cast: Cast) -> None:
    cast.test.allowed_kinds = ["docker_image", "code_bundle"]
    cast.test.save()
    alice = cast.client("alice")
    assert _options(alice.get("/c/demo/submit/").content.decode(), "phase") == ["Dev"]
    system_page = alice.get("/c/demo/submit/system/").content.decode()
    assert _options(system_page, "phase") == ["Test"]
    assert len(_options(system_page, "kind")) == 2
    page = alice.get("/c/demo/").content.decode()
    assert "Submit predictions" in page and "Submit a system" in page


def test_a_refusal_says_what_the_phase_takes_in_words(cast: Cast) -> None:
    cast.test.allowed_kinds = ["docker_image", "code_bundle"]
    cast.test.save()
    for channel in ("web", "api-token"):
        outcome = post(cast, channel, preds_json(), phase=cast.test)
        assert outcome.status == 400
        assert "The Test phase takes Docker images or code bundles, not prediction files." in outcome.message
        assert "docker_image" not in outcome.message.split("<main>")[-1].split("</main>")[0]
