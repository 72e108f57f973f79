"""Team pages: upload predictions, submission history and details."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from leaderboard.accounts.models import Team
from leaderboard.accounts.selectors import team_members_at, team_of_user
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge, Phase, SubmissionKind
from leaderboard.challenges.selectors import (
    kinds_text,
    phase_averages_covered,
    phase_takes,
    system_contract_of,
)
from leaderboard.core.errors import DuplicateUpload, NotFound, ServiceError
from leaderboard.core.middleware import request_received_at
from leaderboard.core.signed_in import authenticated_user
from leaderboard.submissions.intake import (
    DUPLICATE_CONFIRM_LABEL,
    submission_create_predictions,
    submission_create_system,
)
from leaderboard.submissions.lifecycle import submission_cancel, submission_select
from leaderboard.submissions.models import Submission
from leaderboard.submissions.score_slices import METHOD as BREAKDOWN_METHOD
from leaderboard.submissions.score_slices import submission_breakdowns
from leaderboard.submissions.selectors import (
    quota_usage,
    run_attempts_of,
    submission_get_visible,
    submission_queue_position,
    submission_run_report,
    submission_score_history,
    submission_visible_primary_score,
    submission_visible_scores,
    submissions_held_for_review,
    submissions_of_team,
    submissions_on_board,
)
from leaderboard.submissions.storage import submission_file_freed_note, team_storage_usage


class PhaseChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Phase) -> str:
        # People choose "Development", not "mrqa-demo/dev" (Phase.__str__, for logs and the admin).
        return obj.name


class UploadForm(forms.Form):
    # The kinds this form uploads: it lists only the phases that take one of them (``phase_takes``).
    kinds: tuple[str, ...] = (SubmissionKind.PREDICTIONS,)
    phase = PhaseChoiceField(queryset=Phase.objects.none())
    file = forms.FileField()
    description = forms.CharField(max_length=300, required=False)
    # Shown (as a box to tick) only once the service found the file already submitted: duplicate_refuse.
    allow_duplicate = forms.BooleanField(required=False, label=DUPLICATE_CONFIRM_LABEL, widget=forms.HiddenInput)

    def __init__(self, *args: Any, challenge: Challenge, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.phases = [p for p in challenge.phases.all() if phase_takes(p, self.kinds)]
        phase = self.fields["phase"]
        if isinstance(phase, PhaseChoiceField):  # always (the field above); narrows the type
            # Any phase validates, so a page left open after a change gets the service's refusal
            # in words ("The Test phase takes ..."); the list offers only the phases that take it.
            phase.queryset = challenge.phases.all()
            phase.widget.choices = [("", "---------")] + [(p.pk, p.name) for p in self.phases]


_SYSTEM_CHOICES = {SubmissionKind.DOCKER_IMAGE: "Docker image (docker save archive, .tar or .tar.gz)",
                   SubmissionKind.CODE_BUNDLE: "Code bundle (.zip with run.py or run.sh at the top)"}


class SystemForm(UploadForm):
    kinds = tuple(SYSTEM_KINDS)
    kind = forms.ChoiceField(choices=list(_SYSTEM_CHOICES.items()))
    track = forms.CharField(max_length=40, required=False, label="Budget track (optional)", help_text=(
        "The phase's budget track this system is meant for: an image over its size is refused now, "
        "before it runs. Left empty, the system is on every track, marked where it is over budget."))
    field_order = ["phase", "kind", "file", "track", "description"]

    def __init__(self, *args: Any, challenge: Challenge, **kwargs: Any) -> None:
        super().__init__(*args, challenge=challenge, **kwargs)
        del self.fields["allow_duplicate"]  # a system sent again is taken as is (submission_create_system)
        # Offered: the kinds some phase takes; the service refuses, in words, one the chosen phase does not.
        self.fields["kind"].widget.choices = [(k, label) for k, label in _SYSTEM_CHOICES.items()
                                              if any(phase_takes(p, [k]) for p in self.phases)]
        if not any(p.budget_tracks for p in self.phases):
            del self.fields["track"]  # no phase has a budget track: nothing to name


def _upload_page(
    request: HttpRequest,
    slug: str,
    *,
    form_class: type[UploadForm],
    template: str,
    create: Callable[[Team, dict[str, Any]], Submission],
) -> HttpResponse:
    """The upload form of a challenge: validate, hand to the service, show its error or the submission."""
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=request.user, challenge=challenge)
    if team is None:
        messages.info(request, "Create or join a team before you submit.")
        return redirect("team", slug=slug)
    form = form_class(request.POST or None, request.FILES or None, challenge=challenge)
    if not form.phases:
        # A link followed from elsewhere: say what the challenge takes instead of an empty form.
        takes = kinds_text(dict.fromkeys(k for p in challenge.phases.all() for k in p.allowed_kinds))
        messages.info(request, f"{challenge.title} does not take {kinds_text(form_class.kinds)}: "
                               f"its phases take {takes}.")
        other = "submit" if form_class is SystemForm else "submit-system"
        other_kinds = UploadForm.kinds if form_class is SystemForm else SystemForm.kinds
        if any(phase_takes(p, other_kinds) for p in challenge.phases.all()):
            return redirect(other, slug=slug)
        return redirect("challenge", slug=slug)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                submission = create(team, form.cleaned_data)
            except ServiceError as exc:
                # One item per line: an upload refused for several datasets names each on its own.
                form.add_error(None, exc.message.splitlines() or [exc.message])
                status = exc.status_code
                if isinstance(exc, DuplicateUpload):
                    # The confirmation the refusal asks for, ticked by the person, not by default.
                    form.fields["allow_duplicate"].widget = forms.CheckboxInput(attrs={"id": "allow-duplicate"})
            else:
                messages.success(request, f"Submission {submission.pk} accepted and queued.")
                return redirect("submission-detail", slug=slug, pk=submission.pk)
        else:
            status = 400
    phases = list(challenge.phases.all())
    context = {
        "challenge": challenge,
        "team": team,
        "form": form,
        "quotas": [(p, quota_usage(team=team, phase=p)) for p in form.phases],
        "storage": team_storage_usage(team=team),
        **system_contract_of(challenge=challenge, phases=phases),
        "takes_predictions": any(phase_takes(p, UploadForm.kinds) for p in phases),
    }
    return render(request, template, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def submit(request: HttpRequest, slug: str) -> HttpResponse:
    return _upload_page(
        request, slug, form_class=UploadForm, template="submissions/submit.html",
        create=lambda team, data: submission_create_predictions(
            team=team, phase=data["phase"], user=authenticated_user(request),
            upload=data["file"], limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, description=data["description"],
            now=request_received_at(request), allow_duplicate=data["allow_duplicate"],
        ),
    )


@login_required
@require_http_methods(["GET", "POST"])
def submit_system(request: HttpRequest, slug: str) -> HttpResponse:
    return _upload_page(
        request, slug, form_class=SystemForm, template="submissions/submit_system.html",
        create=lambda team, data: submission_create_system(
            team=team, phase=data["phase"], user=authenticated_user(request),
            upload=data["file"], kind=data["kind"], description=data["description"],
            now=request_received_at(request), track=data.get("track", ""),
        ),
    )


@login_required
def submission_list(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=request.user, challenge=challenge)
    if team is None:
        return redirect("team", slug=slug)
    # Each with its ranking score as the team may see it (withheld where a sealed score would follow).
    submissions = [
        (s, submission_visible_primary_score(
            submission=s, scores=submission_visible_scores(submission=s, is_organizer=False)))
        for s in submissions_of_team(team=team)
    ]
    return render(
        request, "submissions/list.html",
        {"challenge": challenge, "team": team, "submissions": submissions, "on_board": submissions_on_board(team=team),
         # Runs waiting for an organizer's look, marked in the list as on their pages.
         "held": submissions_held_for_review(submission_ids=[s.pk for s, _ in submissions if s.status == "queued"])},
    )


def _own_submission(request: HttpRequest, slug: str, pk: int) -> tuple[Challenge, Submission, bool]:
    """The submission if the viewer's team owns it (or the viewer organizes); 404 otherwise,
    with one message whether it does not exist or is another team's (ids reveal nothing)."""
    try:
        submission, is_organizer = submission_get_visible(user=request.user, pk=pk, challenge_slug=slug)
    except NotFound as exc:
        raise Http404(exc.message) from None
    return submission.phase.challenge, submission, is_organizer


_ACTIONS: dict[str, Callable[..., Submission]] = {
    "cancel": submission_cancel,
    "select": submission_select,
    # No "release_log": a log is released from the console, with a reason, audited.
}


@login_required
@require_http_methods(["GET", "POST"])
def submission_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    challenge, submission, is_organizer = _own_submission(request, slug, pk)
    if request.method == "POST":
        action = _ACTIONS.get(request.POST.get("action", ""))
        if action is None:
            messages.error(request, "Unknown action.")
        else:
            try:
                action(submission=submission, user=request.user)
            except ServiceError as exc:
                messages.error(request, exc.message)
        return redirect("submission-detail", slug=slug, pk=pk)
    return render(
        request,
        "submissions/detail.html",
        {
            "challenge": challenge,
            "submission": submission,
            "is_organizer": is_organizer,
            "report": submission_run_report(submission=submission, is_organizer=is_organizer),
            "attempts": run_attempts_of(submission=submission, is_organizer=is_organizer),
            "scores": submission_visible_scores(submission=submission, is_organizer=is_organizer),
            # In the board's words: which datasets each average is the mean of (and which it leaves out).
            "averages": phase_averages_covered(phase=submission.phase, reveal=is_organizer),
            "score_history": submission_score_history(submission=submission, is_organizer=is_organizer),
            "breakdowns": submission_breakdowns(submission=submission, viewer_is_organizer=is_organizer),
            "breakdown_method": BREAKDOWN_METHOD,
            "queue_position": submission_queue_position(submission=submission),
            "file_freed": submission_file_freed_note(submission=submission),
            "on_board": submission.pk in submissions_on_board(team=submission.team),
            # Organizers only: who was on the team when it was submitted (members come and go).
            "members_then": team_members_at(team=submission.team, when=submission.created_at) if is_organizer else None,
        },
    )


@login_required
def submission_download(request: HttpRequest, slug: str, pk: int) -> FileResponse:
    _, submission, _ = _own_submission(request, slug, pk)
    if not submission.file:
        raise Http404("this submission has no file")
    return FileResponse(submission.file.open("rb"), as_attachment=True, filename=submission.original_name or "upload")
