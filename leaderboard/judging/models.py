"""A human evaluation round: sampled questions, the chosen systems' answers merged into candidates,
judges assigned to items, their judgments and the organizers' adjudications.

What a judge is shown never names a system: ``RoundSystem.label`` ("S1", ...) and the submission
stay organizer-side (``selectors.judge_item_view`` builds the judge's page from the item and one
candidate only).  States and who may move them are in ``services``; the rows here hold no rule.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

# The scales and strata are the spec's too (phases[].human_eval): their one definition is there.
from leaderboard.challenges.human_eval import Scale as Scale
from leaderboard.challenges.human_eval import Stratify as Stratify


class RoundState(models.TextChoices):
    DRAFT = "draft", "draft"
    OPEN = "open", "open for judging"
    CLOSED = "closed", "closed"
    PUBLISHED = "published", "published"


# The values a judgment takes on each scale, lowest first, with what the judge reads on the button.
# Wrong/partly/correct are 1/2/3 so that every score lies on metaeval's 1-5 scale; agreement and
# correlations do not depend on the spacing (Pearson is linear-invariant, alpha ordinal, kappa nominal).
SCALE_VALUES: dict[str, tuple[tuple[int, str], ...]] = {
    Scale.FIVE_POINT: ((1, "1"), (2, "2"), (3, "3"), (4, "4"), (5, "5")),
    Scale.CORRECT_PARTLY_WRONG: ((1, "wrong"), (2, "partly correct"), (3, "correct")),
}

# Yang et al. (2018), section 4.1, word for word where the paper gives words.
FIVE_POINT_GUIDELINE = """\
Score the answer by whether it satisfies the demand of the question, how well it covers the key
points, and how concise it is:

5: perfectly answers the question, with little redundant information.
4: sufficiently answers the question, with an unvital point missing or some redundancy.
3: the answer is a little insufficient, such as only giving an opinion without supporting context in a yes/no answer.
2: a vital point is missing or an error exists.
1: totally irrelevant.

Treat the key points as nuggets and weigh them most: for a yes/no question, the yes-or-no opinion and
the important information supporting it; for an entity question, the gold entities."""

CORRECT_PARTLY_WRONG_GUIDELINE = """\
Compare the answer with the question and the passage (the references show what the annotators marked):

correct: answers the question as well as a reference does.
partly correct: overlaps the right answer but is missing part of it or adds wrong material.
wrong: does not answer the question.

Tick "acceptable" when a reader would accept the answer as right even though it matches no reference
word for word (another correct span, a paraphrase, a different but valid granularity)."""

DEFAULT_GUIDELINES: dict[str, str] = {
    Scale.FIVE_POINT: FIVE_POINT_GUIDELINE,
    Scale.CORRECT_PARTLY_WRONG: CORRECT_PARTLY_WRONG_GUIDELINE,
}


class Round(models.Model):
    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="judging_rounds")
    name = models.CharField(max_length=100, blank=True)
    state = models.CharField(max_length=16, choices=RoundState.choices, default=RoundState.DRAFT)
    scale = models.CharField(max_length=24, choices=Scale.choices, default=Scale.FIVE_POINT)
    guideline = models.TextField()
    judges_per_item = models.PositiveSmallIntegerField(default=2)
    # How many questions were asked for; the items are what the sample found (fewer if the data has fewer).
    questions = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    stratify_by = models.CharField(max_length=16, choices=Stratify.choices, blank=True, default=Stratify.NONE)
    # After it no judgment is taken (as if closed), so a late judge cannot change published numbers.
    deadline = models.DateTimeField(null=True, blank=True)
    # Items whose judges' scores differ by more than this go to adjudication (selectors.round_disagreements).
    disagreement_margin = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    opened_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"round {self.pk} of {self.phase} ({self.state})"

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(value for value, _ in SCALE_VALUES[self.scale])


class RoundSystem(models.Model):
    """A system whose answers the round judges.  Its label is the organizers' name for it in
    exports and tables; no judge ever reads it."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="systems")
    # CASCADE like every score of the submission: a deleted team takes its judged answers with it.
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=16)

    class Meta:
        ordering = ["round", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "submission"], name="roundsystem_unique_submission"),
            models.UniqueConstraint(fields=["round", "label"], name="roundsystem_unique_label"),
        ]

    def __str__(self) -> str:
        return f"{self.label} of round {self.round_id}"


class RoundItem(models.Model):
    """A sampled question."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="items")
    dataset = models.ForeignKey("challenges.Dataset", on_delete=models.CASCADE, related_name="+")
    qid = models.CharField(max_length=200)
    # DuReader's YES_NO / ENTITY / DESCRIPTION; "" where the suite has no question types (MRQA).
    question_type = models.CharField(max_length=40, blank=True)
    # The order judges meet the items in: the sample's, shuffled by the seed.
    position = models.PositiveIntegerField()
    # The gold the item was sampled from: references shown and exported come from it, and a gold
    # change afterwards is visible as a different hash.
    gold_sha256 = models.CharField(max_length=64)
    # What the judge reads, copied from the dataset's files when the item was sampled (judging.items):
    # the question, the evidence ([{"title", "paragraphs"}], from the answer-free inputs), the references
    # ([{"text", "yesno"}]) and DuReader's gold entities.  Organizer-side data, shown only through
    # selectors.judge_item_view.
    question = models.TextField(blank=True)
    evidence = models.JSONField(default=list, blank=True)
    references = models.JSONField(default=list, blank=True)
    entities = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["round", "position"]
        constraints = [models.UniqueConstraint(fields=["round", "dataset", "qid"], name="rounditem_unique_question")]

    def __str__(self) -> str:
        return f"{self.dataset.slug}/{self.qid} in round {self.round_id}"


class Candidate(models.Model):
    """One distinct answer to an item: systems that gave the same answer share it, so it is judged once."""

    item = models.ForeignKey(RoundItem, on_delete=models.CASCADE, related_name="candidates")
    answer = models.TextField()
    # The candidate's yes/no opinion (DuReader YES_NO questions): part of what is judged, as in the paper.
    yesno = models.CharField(max_length=16, blank=True)
    # sha256 of the normalized answer and opinion (services.candidate_key): what "identical" means.
    key = models.CharField(max_length=64)
    systems = models.ManyToManyField(RoundSystem, related_name="candidates")
    # The order of an item's candidates as judges see them: shuffled by the seed, so a system's
    # answer is not always first.
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "key"], name="candidate_unique_answer")]

    def __str__(self) -> str:
        return f"candidate {self.pk} of {self.item}"


class Judge(models.Model):
    """Someone the organizers invited to judge a challenge's rounds: no team, no board rights."""

    challenge = models.ForeignKey("challenges.Challenge", on_delete=models.CASCADE, related_name="judges")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judge_roles")
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["challenge", "at", "id"]
        constraints = [models.UniqueConstraint(fields=["challenge", "user"], name="judge_unique_user")]

    def __str__(self) -> str:
        return f"judge {self.user} of {self.challenge}"


class Assignment(models.Model):
    """An item given to a judge: the judge judges every candidate of it (services.round_judges_assign)."""

    item = models.ForeignKey(RoundItem, on_delete=models.CASCADE, related_name="assignments")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="assignments")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "id"]
        constraints = [models.UniqueConstraint(fields=["item", "judge"], name="assignment_unique")]


class Judgment(models.Model):
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="judgments")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="judgments")
    score = models.PositiveSmallIntegerField()
    # Extractive rounds: a judge's word that the answer is right though it matches no reference.
    acceptable = models.BooleanField(null=True, blank=True)
    # When the page showed the candidate (as the page signed it) and when the judgment came.
    shown_at = models.DateTimeField(null=True, blank=True)
    given_at = models.DateTimeField()
    seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["candidate", "given_at", "id"]
        constraints = [models.UniqueConstraint(fields=["candidate", "judge"], name="judgment_unique_per_judge")]

    def __str__(self) -> str:
        return f"{self.score} for candidate {self.candidate_id} by judge {self.judge_id}"


class Adjudication(models.Model):
    """An organizer's score for a candidate the judges disagreed on; the latest one counts, all are kept."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="adjudications")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    score = models.PositiveSmallIntegerField()
    acceptable = models.BooleanField(null=True, blank=True)
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["candidate", "-at", "-id"]

    def __str__(self) -> str:
        return f"adjudicated {self.score} for candidate {self.candidate_id}"
