"""What the Django admin of other apps needs from the boards: edits there are on the boards too."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from leaderboard.rankings.versions import board_changed


class BoardShownAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """An admin whose objects the boards show (a team's name, a dataset's split or alias, a phase's
    board, a submission's standing): each save or delete raises the challenge's board version in
    the same transaction, as the services do, so no board snapshot outlives the edit."""

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
