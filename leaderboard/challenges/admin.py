from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.challenges.models import Challenge, Dataset, DatasetFile, Phase
from leaderboard.challenges.services import dataset_reveal


class PhaseInline(admin.TabularInline):
    model = Phase
    extra = 0


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "metric_suite", "ranking_rule", "is_public")
    inlines = [PhaseInline]
    filter_horizontal = ("staff",)


@admin.action(description="Reveal the selected Split III datasets")
def reveal(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Dataset]) -> None:
    for dataset in queryset:
        dataset_reveal(dataset=dataset)


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "challenge", "split", "sealed_alias", "revealed_at")
    list_filter = ("challenge", "split")
    actions = [reveal]


@admin.register(DatasetFile)
class DatasetFileAdmin(admin.ModelAdmin):
    # Gold files are uploaded with `challenge_load` (validated there) and never served:
    # the admin shows their fingerprint only, with no link to the file.
    list_display = ("dataset", "portion", "n_questions", "size_bytes", "sha256", "uploaded_at")
    fields = ("dataset", "portion", "n_questions", "size_bytes", "sha256", "uploaded_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
