"""What an organizer fills in to confirm an action: always a reason, and what some actions need.

The pages and the API validate with the same forms, so a script is held to what a person is.
"""

from __future__ import annotations

from typing import Any

from django import forms

from leaderboard.challenges.audit import REASON_MAX
from leaderboard.challenges.models import Challenge, Phase
from leaderboard.console.services import ANNOUNCEMENT_MAX
from leaderboard.judging.models import DEFAULT_GUIDELINES, SCALE_VALUES, Scale, Stratify
from leaderboard.judging.services import DEFAULT_SCALES, JUDGEABLE_KINDS
from leaderboard.submissions.models import Status, Submission


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


# --------------------------------------------------------------------------- human evaluation rounds

_DATETIME_FORMATS = ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%z",
                     "%Y-%m-%dT%H:%M:%SZ"]


class RoundCreateForm(forms.Form):
    """What ``judging.services.round_create`` takes; the service checks the rest (and says which field)."""

    name = forms.CharField(max_length=100, required=False, help_text="For the organizers' lists; judges do not read it.")
    phase = forms.ModelChoiceField(queryset=Phase.objects.none(), to_field_name="slug")
    systems_from = forms.ChoiceField(choices=[("top", "the top k of the phase's board"), ("chosen", "the submissions I tick")],
                                     initial="top", widget=forms.RadioSelect, label="Systems")
    top_k = forms.IntegerField(required=False, min_value=1, initial=5, label="k",
                               help_text="Each team's board submission, best first (imported results have no answers).")
    submissions = forms.TypedMultipleChoiceField(required=False, coerce=int, widget=forms.CheckboxSelectMultiple,
                                                 label="Chosen submissions")
    questions = forms.IntegerField(min_value=1, initial=100, help_text="Sampled from the datasets every system answered.")
    seed = forms.IntegerField(required=False, min_value=0, help_text="Empty: a random one, recorded with the round.")
    stratify_by = forms.ChoiceField(choices=Stratify.choices, required=False, label="Stratify",
                                    help_text="Proportional allocation; question types where the suite has them.")
    judges_per_item = forms.IntegerField(min_value=1, max_value=10, initial=2)
    scale = forms.ChoiceField(choices=Scale.choices)
    guideline = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), required=False,
                                help_text="What judges read beside every answer.")
    deadline = forms.DateTimeField(required=False, label="Deadline (UTC)", input_formats=_DATETIME_FORMATS,
                                   help_text="YYYY-MM-DD HH:MM, in UTC; no judgment is taken after it. Empty: none.")
    disagreement_margin = forms.FloatField(required=False, min_value=0,
                                           help_text="Judges' scores differing by more go to adjudication. "
                                                     "Empty: 1 point on 1-5, any difference on three levels.")

    def __init__(self, *args: Any, challenge: Challenge, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.challenge = challenge
        phase_field = self.fields["phase"]
        phase_field.queryset = challenge.phases.order_by("order", "opens_at")  # type: ignore[attr-defined]
        phase_field.label_from_instance = lambda p: p.name  # type: ignore[attr-defined]
        finished = (Submission.objects.filter(phase__challenge=challenge, status=Status.FINISHED,
                                              kind__in=JUDGEABLE_KINDS)
                    .select_related("team", "phase").order_by("phase__order", "-primary_score", "pk"))
        self.fields["submissions"].choices = [  # type: ignore[attr-defined]
            (s.pk, f"{s.phase.name}: {s.team.name}, submission {s.pk}"
                   + (f" ({s.primary_score:.2f})" if s.primary_score is not None else "")) for s in finished]
        scale = DEFAULT_SCALES.get(challenge.metric_suite, Scale.FIVE_POINT)
        self.fields["scale"].initial = scale
        # The suite's default guideline, for the organizer to read and edit.
        self.fields["guideline"].initial = DEFAULT_GUIDELINES[scale]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("systems_from") == "top" and not data.get("top_k"):
            self.add_error("top_k", "How many of the board's top systems?")
        if data.get("systems_from") == "chosen" and not data.get("submissions"):
            self.add_error("submissions", "Tick the submissions to judge.")
        return data

    def service_kwargs(self) -> dict[str, Any]:
        d = self.cleaned_data
        guideline = (d.get("guideline") or "").strip()
        # Left as one of the defaults: the chosen scale's own default (the organizer may have changed
        # the scale without rewriting the text prefilled for the other one).
        if " ".join(guideline.split()) in {" ".join(g.split()) for g in DEFAULT_GUIDELINES.values()}:
            guideline = ""
        top = d["systems_from"] == "top"
        return {
            "phase": d["phase"], "name": d.get("name") or "", "questions": d["questions"], "seed": d.get("seed"),
            "systems": None if top else list(d["submissions"]), "top_k": d["top_k"] if top else None,
            "stratify_by": d.get("stratify_by") or "", "judges_per_item": d["judges_per_item"], "scale": d["scale"],
            "guideline": guideline or None, "deadline": d.get("deadline"),
            "disagreement_margin": d.get("disagreement_margin"),
        }


class JudgeInviteForm(forms.Form):
    user = forms.CharField(max_length=254, label="Username or e-mail",
                           help_text="Of an existing account, on no team of this challenge.")


class AdjudicationForm(forms.Form):
    score = forms.TypedChoiceField(coerce=int, choices=[])
    acceptable = forms.BooleanField(required=False, label="acceptable")
    note = forms.CharField(required=False, max_length=2000, widget=forms.TextInput(attrs={"size": 30}))

    def __init__(self, *args: Any, scale: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["score"].choices = list(SCALE_VALUES[scale])  # type: ignore[attr-defined]
        self.asks_acceptable = scale == Scale.CORRECT_PARTLY_WRONG
        if not self.asks_acceptable:
            del self.fields["acceptable"]
