from __future__ import annotations

from django.contrib import admin

from leaderboard.submissions.models import Score, Submission


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    readonly_fields = ("dataset", "metric", "value")


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "team", "phase", "kind", "status", "failure_cause", "primary_score", "created_at")
    list_filter = ("phase__challenge", "status", "kind")
    readonly_fields = ("file", "sha256", "size_bytes", "primary_score", "scoring_version", "started_at",
                       "finished_at")
    inlines = [ScoreInline]
