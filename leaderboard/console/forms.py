"""What an organizer fills in to confirm an action: always a reason, and what some actions need.

The pages and the API validate with the same forms, so a script is held to what a person is.
"""

from __future__ import annotations

from typing import Any

from django import forms

from leaderboard.challenges.audit import REASON_MAX
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.console.services import ANNOUNCEMENT_MAX


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=REASON_MAX, widget=forms.Textarea(attrs={"rows": 3}),
                             help_text="Why: kept in the audit log with your name and the time.")

    def __init__(self, *args: Any, challenge: Challenge, reason_help: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.challenge = challenge
        if reason_help:
            self.fields["reason"].help_text = reason_help

    def service_kwargs(self) -> dict[str, Any]:
        """The cleaned fields as the service takes them."""
        return dict(self.cleaned_data)


class ExtendForm(ReasonForm):
    phase = forms.ModelChoiceField(queryset=Phase.objects.none(), to_field_name="slug")
    closes_at = forms.DateTimeField(
        required=False, label="New deadline (UTC)", help_text="YYYY-MM-DD HH:MM, in UTC; empty: the phase's own.",
        input_formats=["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%z",
                       "%Y-%m-%dT%H:%M:%SZ"],
    )
    quota_per_day = forms.IntegerField(required=False, min_value=1, label="Submissions per 24 h",
                                       help_text="Empty: the phase's own.")
    quota_total = forms.IntegerField(required=False, min_value=1, label="Submissions in all",
                                     help_text="Empty: the phase's own.")
    field_order = ["phase", "closes_at", "quota_per_day", "quota_total", "reason"]

    def __init__(self, *args: Any, challenge: Challenge, **kwargs: Any) -> None:
        super().__init__(*args, challenge=challenge, **kwargs)
        phase_field = self.fields["phase"]
        phase_field.queryset = challenge.phases.all()  # type: ignore[attr-defined]
        phase_field.label_from_instance = lambda p: f"{p.name} (closes {p.closes_at:%Y-%m-%d %H:%M} UTC)"  # type: ignore[attr-defined]


class AnnouncementForm(ReasonForm):
    text = forms.CharField(max_length=ANNOUNCEMENT_MAX, widget=forms.Textarea(attrs={"rows": 4}),
                           help_text="Shown to everyone on the challenge page, as written (plain text).")
    field_order = ["text", "reason"]
