"""The judge's page: one candidate at a time, blind; POST records the judgment and shows the next.

Signed-in judges of the round only; anyone else (another user, a team member, an organizer who is
not a judge) gets the 404 of a missing page.  No cache may keep the page: it shows references.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from leaderboard.core.caching import viewer_dependent
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.judging.selectors import (
    judge_item_view,
    judge_next_item,
    judge_progress,
    judge_round_get,
    judgment_token_read,
    round_candidate_get,
)
from leaderboard.judging.services import judgment_give


def _score(raw: str | None) -> int:
    try:
        return int(raw or "")
    except ValueError:
        raise ServiceError("choose a score", field="score") from None


@login_required
@require_http_methods(["GET", "POST"])
def judge_page(request: HttpRequest, slug: str, round_id: int) -> HttpResponse:
    status = 200
    try:
        round, judge = judge_round_get(user=request.user, slug=slug, round_id=round_id)
        if request.method == "POST":
            candidate_id, shown_at = judgment_token_read(request.POST.get("token", ""))
            judged = round_candidate_get(round=round, candidate_id=candidate_id)
            try:
                acceptable = (request.POST.get("acceptable") == "1") if "acceptable_asked" in request.POST else None
                judgment_give(judge=judge, candidate=judged, score=_score(request.POST.get("score")),
                              acceptable=acceptable, shown_at=shown_at)
            except NotFound:
                raise
            except ServiceError as exc:
                messages.error(request, exc.message)
                status = exc.status_code
            else:
                return viewer_dependent(redirect("judge", slug=slug, round_id=round_id), confidential=True)
        candidate = judge_next_item(judge=judge, round=round)
        context = {
            "challenge": round.phase.challenge, "round": round, "progress": judge_progress(judge=judge, round=round),
            "view": judge_item_view(judge=judge, candidate=candidate, now=timezone.now()) if candidate else None,
        }
    except NotFound as exc:
        raise Http404(exc.message) from None
    return viewer_dependent(render(request, "judging/judge.html", context, status=status), confidential=True)
