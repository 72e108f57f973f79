from __future__ import annotations

from django.contrib import admin

from leaderboard.accounts.models import ApiToken, Membership, PendingConfirmation, Team
from leaderboard.challenges.admin import BoardShownAdmin


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Team)
class TeamAdmin(BoardShownAdmin):
    list_display = ("name", "challenge", "kind", "is_anonymous", "hidden", "disqualified_reason", "created_at")
    list_filter = ("challenge", "kind", "hidden")
    exclude = ("join_code",)
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Site administrators can see and revoke tokens; no one sees a key (only its digest is stored)."""

    list_display = ("user", "name", "prefix", "created_at", "last_used_at")
    search_fields = ("user__username", "name")
    readonly_fields = ("user", "name", "prefix", "created_at", "last_used_at")
    exclude = ("digest",)

    def has_add_permission(self, request: object) -> bool:
        return False  # a key made here would have to be shown to the administrator


@admin.register(PendingConfirmation)
class PendingConfirmationAdmin(admin.ModelAdmin):
    """Accounts whose address awaits its link; deleting a row confirms the account by hand (an
    operator who knows the address is right)."""

    list_display = ("user", "created_at")
    search_fields = ("user__username", "user__email")
    readonly_fields = ("user", "created_at")

    def has_add_permission(self, request: object) -> bool:
        return False  # only the sign-up page and address changes make these
