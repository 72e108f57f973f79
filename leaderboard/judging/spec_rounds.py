"""A round created from the spec's settings of its phase (``phases[].human_eval``, checked at the load
by ``challenges.human_eval``): the console's "from the spec" and ``manage.py judging_round_create``."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, User
from django.db import transaction

from leaderboard.challenges.models import Phase
from leaderboard.core.errors import Conflict, ServiceError
from leaderboard.judging.models import Judge, Round
from leaderboard.judging.services import judge_invite, round_create

# When the spec leaves them out: the paper judged 5 systems' answers to 500 questions.
DEFAULT_TOP = 5
DEFAULT_QUESTIONS = 500


@dataclass
class SpecRound:
    round: Round
    invited: list[str] = field(default_factory=list)  # judges the spec named, invited now
    judging_already: list[str] = field(default_factory=list)


def round_create_from_spec(*, phase: Phase, by: AbstractBaseUser) -> SpecRound:
    """A draft round with the phase's ``human_eval`` settings (the defaults where it says nothing),
    and the judges it names invited.  All or nothing: a judge who is not a user, or is on a team,
    leaves no round behind."""
    settings = phase.human_eval or {}
    deadline = settings.get("deadline")
    with transaction.atomic():
        created = round_create(
            phase=phase, by=by, name=settings.get("name", ""), top_k=settings.get("top", DEFAULT_TOP),
            questions=settings.get("questions", DEFAULT_QUESTIONS), seed=settings.get("seed"),
            stratify_by=settings.get("stratify_by", ""), judges_per_item=settings.get("judges_per_item", 2),
            scale=settings.get("scale"), guideline=settings.get("guideline"),
            deadline=dt.datetime.fromisoformat(deadline.replace("Z", "+00:00")) if deadline else None,
            disagreement_margin=settings.get("disagreement_margin"),
        )
        out = SpecRound(created)
        for username in settings.get("judges", []):
            user = User.objects.filter(username=username).first()
            if user is None:
                raise ServiceError(f"human_eval.judges: no user called {username!r}; create the account first")
            if Judge.objects.filter(challenge=phase.challenge, user=user).exists():
                out.judging_already.append(username)
                continue
            try:
                judge_invite(challenge=phase.challenge, user=user, by=by)
            except Conflict:
                out.judging_already.append(username)
                continue
            out.invited.append(username)
    return out
