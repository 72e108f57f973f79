"""The site administration's Dataset page: its reveal and unreveal are the console's audited actions.

Here rather than with the challenges' admin, so that no module of ``challenges`` imports the console.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.challenges.admin import BoardShownAdmin
from leaderboard.challenges.models import Dataset
from leaderboard.console.services import dataset_reveal_audited, dataset_unreveal_audited
from leaderboard.core.errors import ServiceError


def _seal_action(request: HttpRequest, queryset: QuerySet[Dataset], change: Callable[..., Dataset], done: str,
                 modeladmin: admin.ModelAdmin) -> None:
    """The console's services, so the audit log records what the site administration does too."""
    for dataset in queryset.select_related("challenge"):
        try:
            change(dataset=dataset, actor=request.user, reason=f"{done} from the site administration")
        except ServiceError as exc:
            modeladmin.message_user(request, f"{dataset}: {exc.message}", level=messages.ERROR)
        else:
            modeladmin.message_user(request, f"{dataset}: {done}.")


@admin.action(description="Reveal the selected Split III datasets (the console shows what becomes public first)")
def reveal(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Dataset]) -> None:
    _seal_action(request, queryset, dataset_reveal_audited, "revealed", modeladmin)


@admin.action(description="Seal the selected Split III datasets again")
def unreveal(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Dataset]) -> None:
    _seal_action(request, queryset, dataset_unreveal_audited, "sealed again", modeladmin)


@admin.register(Dataset)
class DatasetAdmin(BoardShownAdmin):
    list_display = ("slug", "name", "challenge", "split", "sealed_alias", "revealed_at")
    list_filter = ("challenge", "split")
    readonly_fields = ("revealed_at",)
    actions = [reveal, unreveal]
