from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from leaderboard.challenges.models import (
    Announcement,
    AuditEntry,
    Challenge,
    DatasetFile,
    Phase,
    TeamPhaseOverride,
)
from leaderboard.challenges.versions import board_changed


class BoardShownAdmin(admin.ModelAdmin):
    """An admin whose objects the boards show (a team's name, a dataset's split or alias, a phase's
    board, a submission's standing): each save or delete raises the challenge's board version in
    the same transaction, as the services do, so no board snapshot outlives the edit.  The admins of
the apps above (teams, submissions) stand on it too."""

    def board_challenge_id(self, obj: Any) -> int | None:
        return getattr(obj, "challenge_id", None)

    def _changed(self, obj: Model) -> None:
        challenge_id = self.board_challenge_id(obj)
        if challenge_id is not None:
            board_changed(challenge_id=challenge_id)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        self._changed(obj)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)  # inlines: phases, scores
        self._changed(form.instance)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        challenge_id = self.board_challenge_id(obj)
        super().delete_model(request, obj)
        if challenge_id is not None:
            board_changed(challenge_id=challenge_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        challenge_ids = {self.board_challenge_id(obj) for obj in queryset}
        with transaction.atomic():
            super().delete_queryset(request, queryset)
            for challenge_id in challenge_ids - {None}:
                board_changed(challenge_id=challenge_id)  # type: ignore[arg-type]


class PhaseInline(admin.TabularInline):
    model = Phase
    extra = 0


@admin.register(Challenge)
class ChallengeAdmin(BoardShownAdmin):
    list_display = ("slug", "title", "metric_suite", "ranking_rule", "is_public", "organizers", "console")
    search_fields = ("slug", "title")
    inlines = [PhaseInline]
    filter_horizontal = ("staff",)

    def board_challenge_id(self, obj: Any) -> int | None:
        return obj.pk  # type: ignore[no-any-return]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Challenge]:
        return super().get_queryset(request).prefetch_related("staff")

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "staff" and field is not None:
            field.label = "Organizers"
            field.help_text = ("The challenge's organizers: they run it from its organizer console (every "
                               "submission, the queue, re-runs, disqualifications, reveals, extensions, "
                               "announcements). No Django staff flag is needed, nor given.")
        return field

    @admin.display(description="organizers")
    def organizers(self, challenge: Challenge) -> str:
        return ", ".join(user.get_username() for user in challenge.staff.all()) or "—"

    @admin.display(description="console")
    def console(self, challenge: Challenge) -> str:
        return format_html('<a href="{}">console</a>', reverse("console", args=[challenge.slug]))


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read only: the log is what happened."""

    list_display = ("created_at", "challenge", "actor", "action", "target", "reason")
    list_filter = ("challenge", "action")
    search_fields = ("target", "reason")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Announcement)
class AnnouncementAdmin(admin.ModelAdmin):
    list_display = ("challenge", "text", "created_by", "created_at", "is_active")
    list_filter = ("challenge", "is_active")


@admin.register(TeamPhaseOverride)
class TeamPhaseOverrideAdmin(admin.ModelAdmin):
    list_display = ("team", "phase", "closes_at", "quota_per_day", "quota_total", "created_by", "created_at")
    list_filter = ("phase__challenge",)


@admin.register(DatasetFile)
class DatasetFileAdmin(admin.ModelAdmin):
    # Gold files are uploaded with `challenge_load` (validated there) and never served:
    # the admin shows their fingerprint only, with no link to the file.
    list_display = ("dataset", "portion", "n_questions", "size_bytes", "sha256", "uploaded_at")
    fields = ("dataset", "portion", "n_questions", "size_bytes", "sha256", "uploaded_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
