from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from leaderboard.challenges.admin import BoardShownAdmin
from leaderboard.submissions.board import board_entry_refresh
from leaderboard.submissions.models import Score, ScoreHistory, Submission


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    readonly_fields = ("dataset", "metric", "value")


class ScoreHistoryInline(admin.TabularInline):
    """Earlier results, kept when a submission was scored or run again: read only."""

    model = ScoreHistory
    extra = 0
    can_delete = False
    readonly_fields = ("recorded_at", "reason", "scoring_version", "primary_score", "image_digest", "scores")

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(BoardShownAdmin):
    list_display = ("id", "team", "phase", "kind", "status", "failure_cause", "primary_score", "hidden_reason",
                    "excluded_reason", "created_at")
    list_filter = ("phase__challenge", "status", "kind")
    readonly_fields = ("file", "sha256", "size_bytes", "primary_score", "scoring_version", "started_at",
                       "finished_at")
    inlines = [ScoreInline, ScoreHistoryInline]

    def board_challenge_id(self, obj: Any) -> int | None:
        return obj.phase.challenge_id  # type: ignore[no-any-return]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        # Its status, hiding or exclusion may change which submission stands for its team.
        board_entry_refresh(team=form.instance.team, phase=form.instance.phase)
