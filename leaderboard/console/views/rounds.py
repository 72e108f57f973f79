"""The console's human evaluation pages: rounds per phase, a new round, a round's progress and
disagreements, its results and downloads.  Thin: parse, call a judging service or selector, render.

Opening, closing and publishing a round are console actions (``console.actions``: a confirmation
with a reason, as every other action); the pages here link to them.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from leaderboard.challenges.models import Challenge
from leaderboard.console.forms import AdjudicationForm, JudgeInviteForm, RoundCreateForm
from leaderboard.console.views import organizers_only
from leaderboard.core.errors import NotFound, ServiceError
from leaderboard.core.signed_in import authenticated_user
from leaderboard.judging.models import RoundState
from leaderboard.judging.results import (
    TableFormat,
    round_references_export,
    round_results,
    round_results_tables,
    tables_shown,
)
from leaderboard.judging.selectors import (
    challenge_judges,
    judge_user_find,
    round_candidate_get,
    round_disagreements,
    round_get_organized,
    round_judgments_export,
    round_progress,
    rounds_by_phase,
)
from leaderboard.judging.services import adjudication_record, judge_invite, round_create

# Downloads by name: what the file is, and its type.  "tables.*" are what ``python -m scoring
# metaeval --format ...`` prints for judgments.jsonl and references.jsonl.
DOWNLOADS: dict[str, str] = {
    "judgments.jsonl": "application/x-ndjson", "judgments.csv": "text/csv", "references.jsonl": "application/x-ndjson",
    "tables.md": "text/markdown", "tables.csv": "text/csv", "tables.tex": "application/x-tex",
}
_TABLE_FORMAT: dict[str, TableFormat] = {"tables.md": "markdown", "tables.csv": "csv", "tables.tex": "latex"}


@require_http_methods(["GET", "POST"])
@organizers_only
def console_rounds_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    """The rounds of every phase, the challenge's judges, and (POST) a judge invited."""
    form = JudgeInviteForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                user = judge_user_find(name_or_email=form.cleaned_data["user"])
                judge_invite(challenge=challenge, user=user, by=authenticated_user(request))
            except NotFound:
                raise
            except ServiceError as exc:
                form.add_error("user", exc.message)
                status = exc.status_code
            else:
                messages.success(request, f"{user.get_username()} judges this challenge's rounds now. "
                                          "Recorded in the audit log.")
                return redirect("console-rounds", challenge.slug)
        else:
            status = 400
    return render(request, "console/rounds.html", {
        "challenge": challenge, "section": "rounds", "phases": rounds_by_phase(challenge=challenge),
        "judges": challenge_judges(challenge=challenge), "invite": form,
    }, status=status)


@require_http_methods(["GET", "POST"])
@organizers_only
def console_round_new_page(request: HttpRequest, challenge: Challenge) -> HttpResponse:
    form = RoundCreateForm(request.POST if request.method == "POST" else None, challenge=challenge)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created = round_create(by=authenticated_user(request), **form.service_kwargs())
            except NotFound:
                raise
            except ServiceError as exc:
                field = {"systems": "submissions"}.get(exc.field or "", exc.field)
                form.add_error(field if field in form.fields else None, exc.message)
                status = exc.status_code
            else:
                messages.success(request, f"Round {created.pk} created as a draft: {created.items.count()} "
                                          f"questions, {created.systems.count()} systems. Recorded in the audit log.")
                return redirect("console-round", challenge.slug, created.pk)
        else:
            status = 400
    return render(request, "console/round_new.html", {"challenge": challenge, "section": "rounds", "form": form},
                  status=status)


@require_safe
@organizers_only
def console_round_page(request: HttpRequest, challenge: Challenge, round_id: int) -> HttpResponse:
    round = round_get_organized(challenge=challenge, round_id=round_id)
    adjudicable = round.state in (RoundState.OPEN, RoundState.CLOSED)
    disagreements = [(d, AdjudicationForm(scale=round.scale, prefix=f"c{d.judged.candidate.pk}") if adjudicable
                      else None) for d in round_disagreements(round=round)]
    return render(request, "console/round.html", {
        "challenge": challenge, "section": "rounds", "round": round, "progress": round_progress(round=round),
        "systems": round.systems.select_related("submission__team").order_by("id"),
        "disagreements": disagreements, "judges": challenge_judges(challenge=challenge),
    })


@require_POST
@organizers_only
def console_round_adjudicate(request: HttpRequest, challenge: Challenge, round_id: int,
                             candidate_id: int) -> HttpResponse:
    round = round_get_organized(challenge=challenge, round_id=round_id)
    candidate = round_candidate_get(round=round, candidate_id=candidate_id)
    form = AdjudicationForm(request.POST, scale=round.scale, prefix=f"c{candidate.pk}")
    if not form.is_valid():
        messages.error(request, "Not recorded: choose a score on the round's scale.")
    else:
        try:
            adjudication_record(candidate=candidate, by=authenticated_user(request), score=form.cleaned_data["score"],
                                acceptable=form.cleaned_data.get("acceptable") if form.asks_acceptable else None,
                                note=form.cleaned_data.get("note") or "")
        except NotFound:
            raise
        except ServiceError as exc:
            messages.error(request, f"Not recorded: {exc.message}")
        else:
            messages.success(request, f"Adjudicated: candidate {candidate.pk} scores {form.cleaned_data['score']}. "
                                      "Recorded in the audit log.")
    return redirect(reverse("console-round", args=[challenge.slug, round.pk]) + "#disagreements")


def _overall_questions(request: HttpRequest) -> int | None:
    try:
        n = int(request.GET.get("n", ""))
    except ValueError:
        return None
    return n if n >= 1 else None


@require_safe
@organizers_only
def console_round_results_page(request: HttpRequest, challenge: Challenge, round_id: int) -> HttpResponse:
    round = round_get_organized(challenge=challenge, round_id=round_id)
    results = round_results(round=round, overall_questions=_overall_questions(request))
    return render(request, "console/round_results.html", {
        "challenge": challenge, "section": "rounds", "round": round, "results": results,
        "tables": tables_shown(results.tables) if results else [], "downloads": list(DOWNLOADS),
        "n_query": f"?n={results.overall_questions}" if results else "",
    })


@require_safe
@organizers_only
def console_round_download(request: HttpRequest, challenge: Challenge, round_id: int, name: str) -> HttpResponse:
    round = round_get_organized(challenge=challenge, round_id=round_id)
    if name not in DOWNLOADS:
        raise NotFound("No such page, or not one you may see.")
    if name.startswith("judgments."):
        body = round_judgments_export(round=round, fmt="csv" if name.endswith(".csv") else "jsonl")
    elif name == "references.jsonl":
        body = round_references_export(round=round)
    else:
        results = round_results(round=round, overall_questions=_overall_questions(request))
        if results is None:
            raise NotFound("Nothing is judged in this round yet.")
        body = round_results_tables(results=results, fmt=_TABLE_FORMAT[name])
    response = HttpResponse(body, content_type=f"{DOWNLOADS[name]}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="round-{round.pk}-{name}"'
    return response
