from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

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
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "team", "phase", "kind", "status", "failure_cause", "primary_score", "hidden_reason",
                    "excluded_reason", "created_at")
    list_filter = ("phase__challenge", "status", "kind")
    readonly_fields = ("file", "sha256", "size_bytes", "primary_score", "scoring_version", "started_at",
                       "finished_at")
    inlines = [ScoreInline, ScoreHistoryInline]
