"""Challenges as organizers set them up: phases, datasets in MRQA splits, hidden gold files."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def new_challenge_secret() -> str:
    """A per-challenge key: sealed datasets' ids and aliases are derived from it (HMAC)."""
    return secrets.token_hex(32)


class MetricSuite(models.TextChoices):
    MRQA = "mrqa", "MRQA (per-dataset EM/F1, macro-F1 ranks)"
    MRC2018 = "mrc2018", "MRC2018 / DuReader (ROUGE-L ranks, BLEU-4)"
    SQUAD2 = "squad2", "SQuAD 2.0 / unanswerable (EM/F1, HasAns/NoAns, detection)"
    QUAC = "quac", "QuAC (F1, HEQ)"
    COQA = "coqa", "CoQA (F1, in/out of domain)"
    DEEPREAD = "deepread", "Deep Read (HumSent ranks, AutSent, P&R)"


class RankingRule(models.TextChoices):
    BEST = "best", "each team's best submission"
    LATEST = "latest", "each team's latest finished submission"
    SELECTED = "selected", "the submission each team selects (else its latest)"


class SealedAggregates(models.TextChoices):
    # Withhold an aggregate only when a still-sealed per-dataset value follows from it and
    # the visible values (an average over exactly one sealed dataset, in practice).
    ISOLATING = "isolating", "withhold aggregates that isolate one sealed dataset"
    # Withhold every aggregate that covers a sealed dataset; the public board then ranks on
    # the average over the datasets it shows.  Closes the "blank the others" channel too.
    ALL = "all", "withhold every aggregate that covers a sealed dataset"


class IncompleteRows(models.TextChoices):
    """How a row ranks that did not answer every ranked dataset (``ranking: {incomplete: ...}``).

    Stored in ``Challenge.ranking_scope`` (a JSON key, not a column).  Either way the ranking
    average covers the same datasets for every row, so a prediction file that can never answer
    Split III cannot outrank a system that answered all of it on an average over fewer datasets.
    """

    # As MRQA's official script counts an unanswered question: 0.
    ZERO = "zero", "a dataset a row did not answer counts 0"
    UNRANKED = "unranked", "a row that did not answer every ranked dataset is shown unranked"


# The default smallest slice of hidden data a team is shown (Challenge.breakdown_min_questions).
BREAKDOWN_MIN_QUESTIONS = 50


class CampaignConsent(models.TextChoices):
    """Which archived systems an evaluation campaign may run again, by the challenge's terms
    (spec ``campaigns: {consent: ...}``); a team says yes or no on its page (``Team.campaign_choice``)."""

    OPT_OUT = "opt_out", "every system, unless its team opted out"
    OPT_IN = "opt_in", "only the systems of teams that opted in"
    REQUIRED = "required", "every system: the terms allow no opting out"


class Challenge(models.Model):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    metric_suite = models.CharField(max_length=16, choices=MetricSuite.choices)
    # Suite parameters, e.g. {"alpha": 1.0, "beta": 1.0} for mrc2018.
    suite_options = models.JSONField(default=dict, blank=True)
    # How submitted systems run: base image for code bundles, limits, runtime; see
    # leaderboard.sandbox.contract.SystemSettings for the keys and their defaults.
    system_settings = models.JSONField(default=dict, blank=True)
    ranking_rule = models.CharField(max_length=16, choices=RankingRule.choices, default=RankingRule.BEST)
    is_public = models.BooleanField(default=True)
    # Which datasets the ranking average covers: {} for every dataset of the phase, or
    # {"splits": ["II", "III"]} / {"datasets": ["slug", ...]} (MRQA 2019 ranked on II and III),
    # with "incomplete": "zero" | "unranked" when the spec says how incomplete rows rank.
    ranking_scope = models.JSONField(default=dict, blank=True)
    sealed_aggregates = models.CharField(
        max_length=16, choices=SealedAggregates.choices, default=SealedAggregates.ISOLATING
    )
    # None: no limit on a team's members.
    max_team_size = models.PositiveIntegerField(null=True, blank=True)
    # Breakdowns of a submission's scores (submissions.score_slices): on hidden data, a family of slices
    # with one smaller than this many questions is not shown to teams (spec: breakdowns.min_questions).
    breakdown_min_questions = models.PositiveIntegerField(default=BREAKDOWN_MIN_QUESTIONS)
    # Whose systems an evaluation campaign may run again (``submissions.campaigns``).
    campaign_consent = models.CharField(max_length=16, choices=CampaignConsent.choices,
                                        default=CampaignConsent.OPT_OUT)
    # Never shown: keys the re-keyed ids and the aliases of sealed datasets.
    secret = models.CharField(max_length=64, default=new_challenge_secret, editable=False)
    staff = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="organized_challenges")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.title


class PhaseKind(models.TextChoices):
    DEV = "dev", "development"
    TEST = "test", "test"


class SubmissionKind(models.TextChoices):
    PREDICTIONS = "predictions", "prediction file"
    DOCKER_IMAGE = "docker_image", "Docker image"
    CODE_BUNDLE = "code_bundle", "code bundle"
    IMPORTED = "imported", "imported published result"


# The kinds a worker runs in a container, rather than scoring a file the team uploaded.
SYSTEM_KINDS = (SubmissionKind.DOCKER_IMAGE, SubmissionKind.CODE_BUNDLE)

class Phase(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="phases")
    slug = models.SlugField()
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=8, choices=PhaseKind.choices)
    # Which gold portion submissions are scored on: "dev" or "test".
    portion = models.CharField(max_length=8, choices=PhaseKind.choices)
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    # Quotas: None means unlimited.  What counts is defined in submissions.selectors.
    quota_per_day = models.PositiveIntegerField(null=True, blank=True)
    quota_total = models.PositiveIntegerField(null=True, blank=True)
    quota_concurrent = models.PositiveIntegerField(null=True, blank=True)
    allowed_kinds = models.JSONField(default=list, blank=True)
    # The interactive protocol's modes (scoring.dialogs.Mode values) its systems run in, the first
    # the one that ranks; empty: systems run in batch, on every question at once.
    protocol_modes = models.JSONField(default=list, blank=True)
    board_public = models.BooleanField(default=True)
    order = models.PositiveIntegerField(default=0)
    # Boards by measured cost: [{"name", <axis>: limit}] (``challenges.budget_tracks``); [] for none.
    budget_tracks = models.JSONField(default=list, blank=True)
    # An evaluation campaign (spec ``phases[].campaign``): archived systems of another phase run again
    # on datasets of this phase only.  {"of": source phase slug, "systems": "final" | "all",
    # "limits": {limit: value} (what the organizer changed of the challenge's)}; {}: a phase of uploads.
    campaign = models.JSONField(default=dict, blank=True)
    # The settings of its human evaluation round (spec ``phases[].human_eval``, checked by
    # ``challenges.human_eval``); the judging app creates the round from them.  {}: none set.
    human_eval = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["challenge", "order", "opens_at"]
        constraints = [models.UniqueConstraint(fields=["challenge", "slug"], name="phase_unique_slug")]

    def __str__(self) -> str:
        return f"{self.challenge.slug}/{self.slug}"

    @property
    def is_campaign(self) -> bool:
        return bool(self.campaign)


class FilePortion(models.TextChoices):
    """What a dataset file holds: training data (Split I, public, with answers) or a scored portion."""

    TRAIN = "train", "training"
    DEV = "dev", "development"
    TEST = "test", "test"


class Split(models.TextChoices):
    I = "I", "Split I (training, in-domain)"  # noqa: E741 (MRQA's own name)
    II = "II", "Split II (public dev, hidden test)"
    III = "III", "Split III (entirely hidden)"


class Dataset(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="datasets")
    slug = models.SlugField()
    name = models.CharField(max_length=100)
    split = models.CharField(max_length=4, choices=Split.choices)
    # Split III datasets appear under this alias everywhere public until revealed.
    sealed_alias = models.CharField(max_length=40, blank=True)
    revealed_at = models.DateTimeField(null=True, blank=True)
    # Which portions ("dev", "test") the dataset has; boards of a phase show the
    # datasets that have its portion, whether or not gold has been uploaded yet.
    portions = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True)
    # The organizer's categories, tag name -> value ({"passage source": "Wikipedia"}), as in Table 4
    # of the MRQA 2019 overview; boards average the ranking metric over the datasets sharing one
    # (rankings.paper).  A sealed dataset's tags are not shown to the public: they would narrow down
    # which dataset hides behind its alias.
    tags = models.JSONField(default=dict, blank=True)
    order = models.PositiveIntegerField(default=0)
    # The slug of the one phase the dataset belongs to (a campaign's new data: spec ``datasets[].phase``);
    # "": every phase with its portion.  A campaign's dataset on the original boards would change them.
    phase_only = models.SlugField(blank=True)

    class Meta:
        ordering = ["challenge", "order", "slug"]
        constraints = [models.UniqueConstraint(fields=["challenge", "slug"], name="dataset_unique_slug")]

    def __str__(self) -> str:
        return f"{self.challenge.slug}/{self.slug}"

    @property
    def is_sealed(self) -> bool:
        return self.split == Split.III and self.revealed_at is None


class DatasetFile(models.Model):
    """A gold file for one portion (train, dev or test) of a dataset.

    Test gold is never served; train (Split I) and dev gold of Split I/II datasets are public
    downloads, as are the test ``inputs`` of phases that take prediction files: the rules are in
    ``challenges/downloads.py``.
    """

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="files")
    portion = models.CharField(max_length=8, choices=FilePortion.choices)
    gold = models.FileField(upload_to="gold/%Y/")
    # Questions and contexts with every answer removed: what participants' systems read.
    inputs = models.FileField(upload_to="inputs/%Y/", blank=True)
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField()
    n_questions = models.PositiveIntegerField()
    # Question ids, to validate prediction uploads without reading the gold file.
    qids = models.JSONField(default=list)
    uploaded_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["dataset", "portion"], name="datasetfile_unique_portion")]

    def __str__(self) -> str:
        return f"{self.dataset} ({self.portion})"


class RetiredGold(models.Model):
    """A gold file replaced by a newer one, kept while any score still refers to it (by sha256)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="retired_gold")
    portion = models.CharField(max_length=8, choices=FilePortion.choices)
    gold = models.FileField(upload_to="gold/%Y/")
    sha256 = models.CharField(max_length=64)
    n_questions = models.PositiveIntegerField()
    retired_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.dataset} ({self.portion}, retired {self.sha256[:12]})"


class FileDownload(models.Model):
    """How often a file of the Data page was downloaded (organizers see the counts)."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="downloads")
    # A stable name of the file on the Data page, e.g. "train/squad", "dev/xquad-en", "starting-kit".
    key = models.CharField(max_length=200)
    count = models.PositiveIntegerField(default=0)
    last_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["challenge", "key"], name="filedownload_unique_key")]

    def __str__(self) -> str:
        return f"{self.challenge.slug}:{self.key} x{self.count}"


class AuditEntry(models.Model):
    """An organizer's action on a challenge (re-run, disqualify, reveal, extend...): who, what, when, why."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="audit_entries")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=40)
    target = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor} at {self.created_at:%Y-%m-%d %H:%M}"


class Announcement(models.Model):
    """A message the organizers show on the challenge page."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="announcements")
    text = models.TextField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.text[:60]


class TeamPhaseOverride(models.Model):
    """An organizer's extension for one team in one phase: a later deadline, a larger quota."""

    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="phase_overrides")
    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="team_overrides")
    closes_at = models.DateTimeField(null=True, blank=True)
    quota_per_day = models.PositiveIntegerField(null=True, blank=True)
    quota_total = models.PositiveIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "phase"], name="teamphaseoverride_unique")]

    def __str__(self) -> str:
        return f"{self.team} in {self.phase}"


class BoardVersion(models.Model):
    """A challenge's board version is ``base`` plus its ``BoardChange`` rows: the number of changes a
    board shows that ever committed (a score, a board row, a reveal, a team's name or standing, a
    setting, a gold file, a bootstrap result).

    A change adds a row in its own transaction, which locks nothing another writer needs (a
    counter updated in place was one row lock per challenge, taken by every scoring and every
    rename: a deadlock with a transaction holding a team's row, and a stall of all scoring
    during a reload).  Each commit adds one to the version as readers count it, so a snapshot
    tagged with an older count is never served after a change committed.  Folding rows into
    ``base`` (``board_changes_fold``) keeps the count short and leaves the version as it was.
    """

    challenge = models.OneToOneField(Challenge, on_delete=models.CASCADE, primary_key=True,
                                     related_name="+")
    base = models.PositiveBigIntegerField(default=0)
    # When a background rebuild was last sent: further changes within a minute send no other (debounce);
    # a task the broker lost is sent again after that.
    rebuild_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "rankings_boardversion"  # created by the rankings app, moved here without a copy


class BoardChange(models.Model):
    """One committed change of a challenge's boards (``BoardVersion``).  No foreign key: inserting
    one takes no lock on the challenge's row."""

    challenge_id = models.BigIntegerField(db_index=True)

    class Meta:
        db_table = "rankings_boardchange"  # created by the rankings app, moved here without a copy
