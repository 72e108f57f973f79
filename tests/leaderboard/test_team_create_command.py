"""``manage.py team_create``: an operator makes a team with its owner and members, under the site's
rules (confirmed accounts, one team per challenge, the team size, approval), all or nothing.

The cast is conftest's: alice owns Alpha with bob; charlie owns Charlie's; dave has no team; oscar organizes.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from leaderboard.accounts.models import (
    ChallengeTeamRules,
    Membership,
    MembershipEvent,
    PendingConfirmation,
    Role,
    Team,
)
from tests.builders.cast import Cast


def team_create(*args: str) -> str:
    out = StringIO()
    call_command("team_create", *args, stdout=out)
    return out.getvalue()


def test_a_team_is_made_with_its_owner_and_members(cast: Cast) -> None:
    erin = User.objects.create_user("erin", "erin@example.org", "pw")
    printed = team_create(cast.challenge.slug, "Delta", "--owner", "dave", "--member", "erin", "--affiliation", "Uni")
    team = Team.objects.get(challenge=cast.challenge, name="Delta")
    assert team.affiliation == "Uni" and not team.is_anonymous
    roles = dict(Membership.objects.filter(team=team).values_list("user__username", "role"))
    assert roles == {"dave": Role.OWNER, "erin": Role.MEMBER}
    # The join event names nobody on the site as its author: an operator did it.
    assert MembershipEvent.objects.get(team=team, user=erin).by is None
    assert f"team {team.pk} 'Delta' of {cast.challenge.slug}: owner dave, erin; join code {team.join_code}" in printed


def test_a_refused_member_leaves_no_team(cast: Cast) -> None:
    # bob is in Alpha already: the whole command is refused, Delta is not made with dave alone.
    with pytest.raises(CommandError, match="bob: .*already in a team"):
        team_create(cast.challenge.slug, "Delta", "--owner", "dave", "--member", "bob")
    assert not Team.objects.filter(name="Delta").exists()
    assert not Membership.objects.filter(user=cast.dave).exists()


def test_an_unconfirmed_account_cannot_be_put_in_a_team(cast: Cast) -> None:
    erin = User.objects.create_user("erin", "erin@example.org", "pw")
    PendingConfirmation.objects.create(user=erin)
    with pytest.raises(CommandError, match="erin: confirm your e-mail address first"):
        team_create(cast.challenge.slug, "Delta", "--owner", "dave", "--member", "erin")
    assert not Team.objects.filter(name="Delta").exists()


def test_the_team_size_applies(cast: Cast) -> None:
    cast.challenge.max_team_size = 1
    cast.challenge.save(update_fields=["max_team_size"])
    User.objects.create_user("erin", "erin@example.org", "pw")
    with pytest.raises(CommandError, match="erin: Delta is full: this challenge allows at most 1 members"):
        team_create(cast.challenge.slug, "Delta", "--owner", "dave", "--member", "erin")


def test_a_team_waits_for_approval_where_the_challenge_asks(cast: Cast) -> None:
    ChallengeTeamRules.objects.update_or_create(challenge=cast.challenge, defaults={"approval_required": True})
    team_create(cast.challenge.slug, "Delta", "--owner", "dave", "--anonymous")
    team = Team.objects.get(name="Delta")
    assert team.approval_pending and team.is_anonymous


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-challenge", "Delta", "--owner", "dave"], "no challenge has the slug 'no-such-challenge'"),
        (["{slug}", "Delta", "--owner", "nobody"], "no account is named 'nobody'"),
        (["{slug}", "Delta", "--owner", "dave", "--member", "nobody"], "no account is named 'nobody'"),
        (["{slug}", "Alpha", "--owner", "dave"], "dave: choose another name"),
        (["{slug}", " ", "--owner", "dave"], "dave: choose another name"),
        (["{slug}", "Delta", "--owner", "alice"], "alice: you are already in a team"),
    ],
)
def test_bad_input_is_a_clear_error(cast: Cast, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        team_create(*[arg.format(slug=cast.challenge.slug) for arg in args])
    assert Team.objects.filter(challenge=cast.challenge).count() == 2
