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
from leaderboard.accounts.selectors import team_of_user, user_is_organizer
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.core.errors import ServiceError
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import (
    quota_usage,
    submission_queue_position,
    submission_visible_scores,
    submissions_of_team,
)
from leaderboard.submissions.services import (
    submission_cancel,
    submission_create_predictions,
    submission_select,
)
from leaderboard.submissions.system_services import submission_create_system
from leaderboard.submissions.systems import SystemSettings


class UploadForm(forms.Form):
    phase = forms.ModelChoiceField(queryset=Phase.objects.none())
    file = forms.FileField()
    description = forms.CharField(max_length=300, required=False)

    def __init__(self, *args: object, challenge: Challenge, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.fields["phase"].queryset = challenge.phases.all()  # type: ignore[attr-defined]


class SystemForm(UploadForm):
    kind = forms.ChoiceField(choices=[("docker_image", "Docker image (docker save archive, .tar or .tar.gz)"),
                                      ("code_bundle", "Code bundle (.zip with run.py or run.sh at the top)")])
    field_order = ["phase", "kind", "file", "description"]


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
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                submission = create(team, form.cleaned_data)
            except ServiceError as exc:
                form.add_error(None, exc.message)
                status = exc.status_code
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
        "quotas": [(p, quota_usage(team=team, phase=p)) for p in phases],
        "system": SystemSettings.from_json(challenge.system_settings),
    }
    return render(request, template, context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def submit(request: HttpRequest, slug: str) -> HttpResponse:
    return _upload_page(
        request, slug, form_class=UploadForm, template="submissions/submit.html",
        create=lambda team, data: submission_create_predictions(
            team=team, phase=data["phase"], user=request.user,  # type: ignore[arg-type]
            upload=data["file"], limit_bytes=settings.MAX_PREDICTION_UPLOAD_BYTES, description=data["description"],
        ),
    )


@login_required
@require_http_methods(["GET", "POST"])
def submit_system(request: HttpRequest, slug: str) -> HttpResponse:
    return _upload_page(
        request, slug, form_class=SystemForm, template="submissions/submit_system.html",
        create=lambda team, data: submission_create_system(
            team=team, phase=data["phase"], user=request.user,  # type: ignore[arg-type]
            upload=data["file"], kind=data["kind"], description=data["description"],
        ),
    )


@login_required
def submission_list(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    team = team_of_user(user=request.user, challenge=challenge)
    if team is None:
        return redirect("team", slug=slug)
    submissions = list(submissions_of_team(team=team))
    return render(
        request, "submissions/list.html", {"challenge": challenge, "team": team, "submissions": submissions}
    )


def _own_submission(request: HttpRequest, slug: str, pk: int) -> tuple[Challenge, Submission, bool]:
    """The submission if the viewer's team owns it (or the viewer organizes); 404 otherwise.

    404 rather than 403, so that ids of other teams' submissions reveal nothing.
    """
    challenge = get_object_or_404(Challenge, slug=slug, is_public=True)
    submission = get_object_or_404(
        Submission.objects.select_related("phase__challenge", "team"), pk=pk, phase__challenge=challenge
    )
    is_organizer = user_is_organizer(user=request.user, challenge=challenge)
    team = team_of_user(user=request.user, challenge=challenge)
    if not is_organizer and (team is None or team.pk != submission.team_id):
        raise Http404("no such submission")
    return challenge, submission, is_organizer


@login_required
@require_http_methods(["GET", "POST"])
def submission_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    challenge, submission, is_organizer = _own_submission(request, slug, pk)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "cancel":
                submission_cancel(submission=submission, user=request.user)  # type: ignore[arg-type]
            elif request.POST.get("action") == "select":
                submission_select(submission=submission, user=request.user)  # type: ignore[arg-type]
        except ServiceError as exc:
            messages.error(request, exc.message)
        return redirect("submission-detail", slug=slug, pk=pk)
    return render(
        request,
        "submissions/detail.html",
        {
            "challenge": challenge,
            "submission": submission,
            "scores": submission_visible_scores(submission=submission, is_organizer=is_organizer),
            "queue_position": submission_queue_position(submission=submission),
        },
    )


@login_required
def submission_download(request: HttpRequest, slug: str, pk: int) -> FileResponse:
    _, submission, _ = _own_submission(request, slug, pk)
    if not submission.file:
        raise Http404("this submission has no file")
    return FileResponse(submission.file.open("rb"), as_attachment=True, filename=submission.original_name or "upload")
