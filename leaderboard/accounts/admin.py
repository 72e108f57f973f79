from __future__ import annotations

from django.contrib import admin

from leaderboard.accounts.models import Membership, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "challenge", "kind", "is_anonymous", "hidden", "disqualified_reason", "created_at")
    list_filter = ("challenge", "kind", "hidden")
    exclude = ("join_code",)
    inlines = [MembershipInline]
