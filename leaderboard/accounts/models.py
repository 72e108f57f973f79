"""Teams: what submits and ranks.  One user belongs to at most one team per challenge."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.core.display import shown_text_validate


class TeamKind(models.TextChoices):
    PARTICIPANT = "participant", "participant team"
    # Rows organizers add from published results: baselines and historical systems.
    BASELINE = "baseline", "baseline or published result"


class Team(models.Model):
    challenge = models.ForeignKey("challenges.Challenge", on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=100, validators=[shown_text_validate])
    kind = models.CharField(max_length=16, choices=TeamKind.choices, default=TeamKind.PARTICIPANT)
    affiliation = models.CharField(max_length=200, blank=True, validators=[shown_text_validate])
    # Shown as "Anonymous" on public boards; members and organizers still see the name.
    is_anonymous = models.BooleanField(default=False)
    # Anyone holding the code may join; the owner can rotate it.
    join_code = models.CharField(max_length=32, unique=True)
    reference = models.CharField(max_length=300, blank=True, help_text="paper or URL, for baselines")
    # Set by an organizer: the team's rows leave the board (hidden) or stay unranked with the
    # reason (disqualified); the team sees the reason on its pages.
    disqualified_reason = models.CharField(max_length=300, blank=True)
    hidden = models.BooleanField(default=False)
    # Made in a challenge whose spec says ``teams: {approval: required}`` and not yet approved by an
    # organizer (in the console): the team cannot submit, and its page says so.
    approval_pending = models.BooleanField(default=False)
    # The team's word on evaluation campaigns (re-runs of its archived systems on new data): "in",
    # "out", or "" (not said: the challenge's ``campaign_consent`` decides).
    campaign_choice = models.CharField(max_length=3, blank=True,
                                       choices=[("", "not said"), ("in", "opted in"), ("out", "opted out")])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["challenge", "name"]
        constraints = [models.UniqueConstraint(fields=["challenge", "name"], name="team_unique_name")]

    def __str__(self) -> str:
        return self.name


class ChallengeTeamRules(models.Model):
    """How a challenge takes its teams, from its spec's ``teams:`` mapping (kept by the accounts app,
    which alone reads it).  No row: the defaults (no approval)."""

    challenge = models.OneToOneField("challenges.Challenge", primary_key=True, on_delete=models.CASCADE,
                                     related_name="team_rules")
    # A new team waits for an organizer's approval before it may submit.
    approval_required = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.challenge}: approval {'required' if self.approval_required else 'off'}"


class Role(models.TextChoices):
    OWNER = "owner", "owner"
    MEMBER = "member", "member"


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    # Copied from the team so the database itself enforces one team per user per challenge.
    challenge = models.ForeignKey("challenges.Challenge", on_delete=models.CASCADE, related_name="+")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "challenge"], name="membership_one_team_per_challenge"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class InviteStatus(models.TextChoices):
    PENDING = "pending", "pending"
    ACCEPTED = "accepted", "accepted"
    DECLINED = "declined", "declined"
    CANCELLED = "cancelled", "cancelled"


class TeamInvite(models.Model):
    """An invitation to join a team, by username or e-mail, which the invitee accepts or declines."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    invited_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="team_invites"
    )
    email = models.EmailField(blank=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=12, choices=InviteStatus.choices, default=InviteStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    responded_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"invite to {self.team} for {self.invited_user or self.email} ({self.status})"


class MembershipEventKind(models.TextChoices):
    """What ``MembershipEvent.event`` holds.  Not the field's ``choices``: that would be a migration
    for no gain, since only the accounts services write events."""

    CREATED = "created", "created the team"  # joined as its owner
    JOINED = "joined", "joined"  # by join code or by accepting an invitation
    LEFT = "left", "left"
    REMOVED = "removed", "removed by the owner"
    OWNER = "owner", "became the owner"  # ``by`` is the previous owner, who stays as a member


class MembershipEvent(models.Model):
    """Who was on which team when: kept for the organizers (joined, left, removed, owner handed over)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="membership_events")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16)
    at = models.DateTimeField(auto_now_add=True)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.user} {self.event} {self.team} at {self.at:%Y-%m-%d %H:%M}"


class LoginFailure(models.Model):
    """One attempt counted by the accounts throttle (``services.throttle_reserve``), by a key: a
    failed login or token request (per client and username, per client, per known device), or a
    confirmation mail (per address).  Counted in a sliding window, in the database so every web
    process agrees."""

    key = models.CharField(max_length=200, db_index=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)


class PendingConfirmation(models.Model):
    """An account made on the sign-up page whose e-mail address is not confirmed yet: it may log
    in, but not create or join a team or submit (``selectors.user_may_take_part``).

    Only the sign-up page makes these, the one way a stranger makes an account.  Accounts the
    platform's operators make (``createsuperuser``, management commands, the demo, the admin,
    test factories) and every account older than this table have none, so they count as
    confirmed with no step to forget.  Confirming deletes the row.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE,
                                related_name="pending_confirmation")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user}: e-mail address not confirmed"


class ApiToken(models.Model):
    """One of a user's named API keys (a laptop, a CI job, a submit script), each revoked alone.

    Only the key's sha256 is kept: a key is shown once, when it is made, and a copy of the
    database (a backup, a leaked dump) holds no key that works.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=64)
    digest = models.CharField(max_length=64, unique=True)
    # The key's first characters, so that its owner can tell which key a name stands for.
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    # Written at most once a minute per token (see api_token_use): a hint for revoking what is unused.
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="api_token_unique_name")]

    def __str__(self) -> str:
        return f"{self.user}: {self.name} ({self.prefix}…)"
