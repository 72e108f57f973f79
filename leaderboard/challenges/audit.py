"""The audit log of a challenge: every organizer action, who took it, when and why.

Each console action writes its entry in the transaction that makes the change, so the log never
shows an action that did not happen nor misses one that did.  Entries are for the organizers
(the console lists them); ``reason`` is what the organizer wrote, and for the actions a team is
told about (a disqualification, a hidden row) the same words reach the team.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from leaderboard.challenges.models import AuditEntry, Challenge
from leaderboard.core.errors import ServiceError

# Reasons are stored on rows with 300 characters (``excluded_reason``, ``hidden_reason``, ...), some
# after a prefix ("disqualified: "): what an organizer may write fits whatever it goes to.
REASON_MAX = 250


def audit_reason_clean(reason: str) -> str:
    """The reason an organizer gave, checked: required, one paragraph, at most ``REASON_MAX`` characters."""
    text = " ".join((reason or "").split())
    if not text:
        raise ServiceError("say why (the reason is kept in the audit log)", field="reason")
    if len(text) > REASON_MAX:
        raise ServiceError(f"the reason is {len(text)} characters long; at most {REASON_MAX}", field="reason")
    return text


def audit_record(
    *, challenge: Challenge, actor: AbstractBaseUser | None, action: str, target: str, reason: str,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """One entry; call it inside the transaction that makes the change it records."""
    return AuditEntry.objects.create(
        challenge=challenge, actor_id=actor.pk if actor is not None else None, action=action[:40],
        target=target[:200], reason=reason, details=details or {},
    )
