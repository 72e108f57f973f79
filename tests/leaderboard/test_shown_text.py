"""A team's name and affiliation are shown to everyone: on boards, pages, exports.  Text holding a
control character, a line break or a text-direction override is refused on every path that stores
it (the team page, renaming, the service, an import), with the character and where it stands; the
scripts and emoji sequences people write their names in are kept.

The cast is conftest's: alice owns Alpha with bob; charlie owns Charlie's; dave has no team.
"""

from __future__ import annotations

import pytest

from leaderboard.accounts.models import Team
from leaderboard.accounts.services import team_create, team_update
from leaderboard.core.display import shown_text_problem
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.imports import ImportedEntry, results_import
from tests.builders.cast import Cast

# "Alpha" then U+202E: shown as "Alpha" followed by the rest reversed, so it reads as another team's name.
SPOOF = "Alpha\u202eahplA"


@pytest.mark.parametrize(("text", "said"), [
    ("a\x01b", "holds the control character U+0001 at character 2"),
    ("tab\there", "holds the control character U+0009 at character 4"),
    ("two\nlines", "holds the control character U+000A at character 4"),
    ("x\u2028y", "holds the line separator U+2028 at character 2"),
    (SPOOF, "holds the text-direction control U+202E at character 6"),
    ("\u2067isolated", "holds the text-direction control U+2067 at character 1"),
    ("half \ud800", "holds the lone surrogate U+D800 at character 6"),
])
def test_what_is_refused_is_said_with_the_character_and_its_place(text: str, said: str) -> None:
    assert shown_text_problem(text) == said


@pytest.mark.parametrize("text", [
    "Alpha Readers", "北京大学 MRC", "فريق القراءة\u200f", "👩\u200d💻 coders", "Çağ-Ω (ß)", "",
])
def test_the_names_people_write_are_kept(text: str) -> None:
    assert shown_text_problem(text) is None


def test_the_team_page_refuses_such_a_name_and_says_why(cast: Cast) -> None:
    dave = cast.client("dave")
    response = dave.post("/c/demo/team/", {"action": "create", "name": SPOOF})
    assert response.status_code == 400
    assert [str(m) for m in response.context["messages"]] == [
        "the team's name holds the text-direction control U+202E at character 6: use visible characters only"
    ]
    assert not Team.objects.filter(name=SPOOF).exists()
    # The same name without the control is a name like any other.
    assert dave.post("/c/demo/team/", {"action": "create", "name": "Alphaahpla"}).status_code == 302


def test_renaming_refuses_it_alike_and_keeps_the_old_name(cast: Cast) -> None:
    renamed = cast.client("alice").post("/c/demo/team/", {"action": "rename", "name": "Al\x02pha"}, follow=True)
    assert [str(m) for m in renamed.context["messages"]] == [
        "the team's name holds the control character U+0002 at character 3: use visible characters only"
    ]
    assert Team.objects.get(pk=cast.alpha.pk).name == "Alpha"


def test_an_affiliation_is_held_to_the_same_rule(cast: Cast) -> None:
    with pytest.raises(ServiceError, match="the affiliation holds the control character U\\+000A at character 4"):
        team_create(challenge=cast.challenge, owner=cast.dave, name="Dave's", affiliation="Uni\nof Spoof")
    assert not Team.objects.filter(name="Dave's").exists()
    with pytest.raises(ServiceError, match="U\\+202E"):
        team_update(team=cast.alpha, actor=cast.alice, affiliation="Lab\u202e")
    assert Team.objects.get(pk=cast.alpha.pk).affiliation == ""
    team_update(team=cast.alpha, actor=cast.alice, affiliation="  清华大学  ")
    assert Team.objects.get(pk=cast.alpha.pk).affiliation == "清华大学"


def test_an_import_naming_a_team_so_is_refused_whole(cast: Cast) -> None:
    before = set(Team.objects.values_list("name", flat=True))
    entries = [ImportedEntry(name="Fine", scores={}), ImportedEntry(name="Bad\x00name", scores={})]
    with pytest.raises(ServiceError, match="team 'Bad\\\\x00name': its name holds the control character U\\+0000"):
        results_import(phase=cast.dev, entries=entries)
    assert set(Team.objects.values_list("name", flat=True)) == before


def test_the_admin_refuses_it_too(cast: Cast) -> None:
    """The admin saves a model whole, past the services: the field's validator is the same rule."""
    response = cast.client("root").post(f"/admin/accounts/team/{cast.charlies.pk}/change/", {
        "challenge": cast.challenge.pk, "name": "Charlie\u202es", "kind": "participant", "affiliation": "",
        "reference": "", "disqualified_reason": "",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000",
    })
    assert response.status_code == 200  # the form again, with the error
    assert "holds the text-direction control U+202E at character 8" in response.content.decode()
    assert Team.objects.get(pk=cast.charlies.pk).name == "Charlie's"
