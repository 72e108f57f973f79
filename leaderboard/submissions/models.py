"""Submissions, their lifecycle, and the scores they earn.

The state machine lives in ``submissions.lifecycle`` (``submission_*``), never in
``save()``: submitted -> queued -> running -> scoring -> finished, or failed
(with a reason and who caused it) or cancelled.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from leaderboard.challenges.models import SubmissionKind


class Status(models.TextChoices):
    SUBMITTED = "submitted", "submitted"
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SCORING = "scoring", "scoring"
    FINISHED = "finished", "finished"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


ACTIVE_STATUSES = (Status.SUBMITTED, Status.QUEUED, Status.RUNNING, Status.SCORING)
FINAL_STATUSES = (Status.FINISHED, Status.FAILED, Status.CANCELLED)


class FailureCause(models.TextChoices):
    NONE = "", "none"
    PARTICIPANT = "participant", "the submission"
    # Failures the platform caused never count against a team's quota.
    PLATFORM = "platform", "the platform"


# The tail of a platform fault's traceback kept for the organizers (``Submission.failure_detail``).
FAILURE_DETAIL_CHARS = 20_000


class Verdict(models.TextChoices):
    """How a run ended, in a fixed vocabulary.

    For a run over hidden data this (with the dataset's public label) is all its
    team learns about a failure: nothing the system wrote or read can reach
    them through it.  Organizers see ``failure_reason`` in full.
    """

    NONE = "", "none"
    FINISHED = "finished", "finished"
    OUTPUT_MISSING = "output_missing", "output missing"
    OUTPUT_NOT_JSON = "output_not_json", "output not valid JSON"
    OUTPUT_WRONG_SHAPE = "output_wrong_shape", "output of the wrong shape"
    # Valid JSON of the right shape with an answer no store takes (answers_json.answer_refusal).
    ANSWER_REFUSED = "answer_refused", "an answer the platform cannot take"
    UNKNOWN_IDS = "unknown_ids", "unknown ids present"
    ANSWERS_MISSING = "answers_missing", "answers missing"
    OUTPUT_TOO_LARGE = "output_too_large", "output over the size limit"
    TIME_LIMIT = "time_limit", "time limit reached"
    MEMORY_LIMIT = "memory_limit", "memory limit reached"
    CRASHED = "crashed", "crashed"
    NOT_STARTED = "not_started", "could not be started"
    PLATFORM = "platform", "platform error"
    GOLD = "gold", "organizers' data error"


class Submission(models.Model):
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="submissions")
    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="submissions")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=SubmissionKind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SUBMITTED)
    failure_reason = models.TextField(blank=True)
    failure_cause = models.CharField(max_length=16, choices=FailureCause.choices, blank=True, default="")
    # A platform fault's traceback (the tail of it), for the organizers' page only: never a team's.
    failure_detail = models.TextField(blank=True)
    verdict = models.CharField(max_length=32, choices=Verdict.choices, blank=True, default="")
    # The dataset a verdict is about (output missing for X...), shown by its public label.
    verdict_dataset = models.ForeignKey(
        "challenges.Dataset", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Shown unranked on the board, with this reason (an imported row the organizers
    # excluded, a disqualified submission).
    excluded_reason = models.CharField(max_length=300, blank=True)
    # Set by an organizer: the submission leaves the board; its team sees the reason.
    hidden_reason = models.CharField(max_length=300, blank=True)
    description = models.CharField(max_length=300, blank=True)
    file = models.FileField(upload_to="submissions/%Y/%m/", blank=True)
    original_name = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    # The team may pick which submission represents it (ranking rule "selected").
    is_selected = models.BooleanField(default=False)
    # The ranking metric, copied here when scores are written so boards sort without joins.
    primary_score = models.FloatField(null=True, blank=True)
    scoring_version = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # An imported row of published results: the day its results were published, the date its board
    # shows instead of an upload time (created_at keeps the original submission's time, for ties).
    published_on = models.DateField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Containerised systems (kinds docker_image and code_bundle).
    # The image id (sha256 of its config) read from the upload: what runs is pinned by it.
    image_digest = models.CharField(max_length=80, blank=True)
    # Runs: a worker holds a lease while it runs a system and renews it with heartbeats;
    # a run whose lease expired is re-queued (its worker died), never left "running".
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    run_seconds = models.FloatField(null=True, blank=True)
    runtime = models.CharField(max_length=20, blank=True)
    peak_memory_mb = models.PositiveIntegerField(null=True, blank=True)
    # The gold files (dataset id -> sha256) of the data a run was given when it was claimed: an
    # organizer who replaces one while the system runs makes its answers another data's, so the run
    # goes again, as the platform's fault (``evaluation.submission_run_finish``).
    run_gold = models.JSONField(default=dict, blank=True)
    # The plan the attempt's claim built from that gold (``RunPlan.as_json``): what every later stage
    # of the attempt reads (``selectors.submission_run_plan``), so that a dataset revealed meanwhile
    # changes no name or id key of the run.  Platform-side: datasets, files, keys; no gold answer.
    # Null for runs claimed before plans were kept.
    run_plan = models.JSONField(null=True, blank=True)
    # stdout and stderr of the run, capped.  A run over hidden data shows it to the
    # organizers only, until one of them releases it to the team (recorded).
    log = models.TextField(blank=True)
    # The platform's own messages about the run (log cut here, container could not start...),
    # kept apart from ``log`` so that a system cannot imitate them: [{"at": ..., "text": ...}], where
    # "at" is the position in ``log`` a note is about (where bytes were cut) or null (leaderboard.sandbox.contract.RunNote).
    log_notes = models.JSONField(default=list, blank=True)
    log_released_at = models.DateTimeField(null=True, blank=True)
    log_released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A run on hidden data held for an organizer's look (its team's platform failures passed the
    # challenge's ``platform_failures_per_day``: selectors.run_queue_order) that an organizer let go.
    hold_released_at = models.DateTimeField(null=True, blank=True)
    hold_released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["phase", "team", "status"]),
            models.Index(fields=["status", "queued_at"]),
        ]

    def __str__(self) -> str:
        return f"submission {self.pk} ({self.status})"

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES


class AttemptEnd(models.TextChoices):
    """How one attempt of a run ended.  Why, in the platform's words, is the attempt's verdict
    (``Verdict``) and failure cause (``FailureCause``): the same codes the submission carries."""

    RUNNING = "", "running"
    SCORED = "scored", "scored"
    # The team's fault (its verdict says which): final and counted.
    FAILED = "failed", "failed by the submission"
    # The platform's fault (its reason says which): not counted; queued again while attempts remain.
    PLATFORM = "platform", "stopped by the platform"
    # Its worker vanished (lease expired, or a restarted worker named it dead): reaped.
    LOST = "lost", "worker lost"
    CANCELLED = "cancelled", "cancelled"


class RunAttempt(models.Model):
    """One attempt of a system run: which worker claimed it, when, and how it ended.

    Written by the transitions themselves (``submissions.attempts``), in their UPDATE's
    transaction.  What a viewer may read of it is decided by ``selectors.run_attempts_of``
    (under ``submission_run_report``'s rule).  The log is not copied here: it lives on the
    submission (the finishing attempt's) and, for a run replaced by a re-run, in its history.
    """

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="run_attempts")
    number = models.PositiveSmallIntegerField()
    worker = models.CharField(max_length=200, blank=True)  # token name / instance (Submission.worker)
    host = models.CharField(max_length=200, blank=True)
    # The worker's words for its hardware (READERBOARD_HARDWARE_CLASS), as it claimed: budget boards
    # show it beside the run's figures, which mean little without it.  "": not stated.
    hardware_class = models.CharField(max_length=60, blank=True)
    claimed_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end = models.CharField(max_length=16, choices=AttemptEnd.choices, blank=True, default="")
    verdict = models.CharField(max_length=32, choices=Verdict.choices, blank=True, default="")
    failure_cause = models.CharField(max_length=16, choices=FailureCause.choices, blank=True, default="")
    # In the platform's words, for the organizers (a team reads the submission's, through its report).
    reason = models.TextField(blank=True)
    detail = models.TextField(blank=True)  # a platform fault's traceback tail: organizers only
    exit_code = models.IntegerField(null=True, blank=True)
    run_seconds = models.FloatField(null=True, blank=True)
    peak_memory_mb = models.PositiveIntegerField(null=True, blank=True)
    # Whether the submission's ``log`` is this attempt's (the finishing attempt recorded it).
    log_recorded = models.BooleanField(default=False)
    # While the attempt runs: what its system printed so far, as its worker captures the log (the
    # same cap), with the platform's notes on it ([{"at", "text"}], as ``Submission.log_notes``) and
    # when it came.  Emptied when the attempt ends: the finishing attempt's log goes on the
    # submission.  Who may read it is ``selectors.submission_run_report``'s to say.
    live_log = models.TextField(blank=True)
    live_log_notes = models.JSONField(default=list, blank=True)
    live_log_at = models.DateTimeField(null=True, blank=True)
    # Made from a submission's fields by the migration, for runs older than these records.
    derived = models.BooleanField(default=False)
    # Set when an organizer ran the submission again (its attempts count from 1 again): the
    # attempts of the run that entry replaced, whose log the entry keeps.  Null: the current run's.
    history = models.ForeignKey("ScoreHistory", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="attempts")

    class Meta:
        ordering = ["submission", "number"]
        constraints = [models.UniqueConstraint(fields=["submission", "number"], condition=Q(history__isnull=True),
                                               name="runattempt_unique")]

    def __str__(self) -> str:
        return f"attempt {self.number} of submission {self.submission_id}"


class Score(models.Model):
    """One number: a metric of a submission on a dataset, or an aggregate (dataset null)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    dataset = models.ForeignKey("challenges.Dataset", null=True, blank=True, on_delete=models.CASCADE)
    metric = models.CharField(max_length=64)
    value = models.FloatField(null=True)
    # The gold file the value was computed against ("" for aggregates and imported results).
    gold_sha256 = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "dataset", "metric"],
                condition=Q(dataset__isnull=False),
                name="score_unique_per_dataset",
            ),
            models.UniqueConstraint(
                fields=["submission", "metric"],
                condition=Q(dataset__isnull=True),
                name="score_unique_aggregate",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.metric}={self.value}"


class ScoreHistory(models.Model):
    """A submission's earlier scores, kept when it is scored again (a gold change, a re-run)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="score_history")
    recorded_at = models.DateTimeField(auto_now_add=True)
    # Why the scores were replaced, e.g. "gold of xquad-en (test) changed", "re-run by oscar".
    reason = models.TextField()
    scoring_version = models.CharField(max_length=40, blank=True)
    primary_score = models.FloatField(null=True, blank=True)
    image_digest = models.CharField(max_length=80, blank=True)
    # [{"dataset": slug or null, "metric", "value", "gold_sha256"}]
    scores = models.JSONField(default=list)
    # How the replaced run went, for a system run again: what ran (the image id, or for a code bundle
    # its archive's sha256 and the base image), where and how (runtime, worker, attempts), and how it
    # ended (verdict, exit code, run time, peak memory); {} for a prediction file.
    run = models.JSONField(default=dict, blank=True)
    # Its whole log, as the organizers read it before the run again replaced it.
    log = models.TextField(blank=True)

    class Meta:
        ordering = ["-recorded_at", "-id"]

    def __str__(self) -> str:
        return f"scores of submission {self.submission_id} until {self.recorded_at:%Y-%m-%d %H:%M}"


class QuestionScores(models.Model):
    """Per-question scores as the scoring library returned them, for significance and breakdowns."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="question_scores")
    dataset = models.ForeignKey("challenges.Dataset", on_delete=models.CASCADE)
    records = models.JSONField()
    # The ranking metric's per-question values in the board's units, aligned with the dataset
    # file's qids (float32; NaN where a question does not count, as QuAC's filtered ones), so a
    # board's bootstrap reads 12 small arrays per row instead of parsing every record.  Filled
    # on first use by ``rankings.board_significance``; ``vector_metric`` names what it holds.
    vector = models.BinaryField(null=True, blank=True)
    vector_metric = models.CharField(max_length=40, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "dataset"], name="questionscores_unique"),
        ]


class BoardEntry(models.Model):
    """The submission that represents a team on a phase's board (per the ranking rule).

    Kept up to date by ``board_entry_refresh`` whenever a submission finishes or a
    team selects one, so a board page reads one row per team instead of scanning
    every submission.
    """

    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="board_entries")
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="board_entries")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="board_entries")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["phase", "team"], name="boardentry_unique")]


class WorkerToken(models.Model):
    """A compute worker's credential for the internal API (``/internal/v1/``): one per worker.

    Only the token's sha256 is stored; the token itself is shown once, when it is made
    (``manage.py worker_token_create``).  A run claimed with a token is the token's: every other
    call about that run must come with the same token.  ``last_seen_at`` is the worker's last
    call of any kind (the console's "last heartbeat").
    """

    name = models.SlugField(max_length=60, unique=True)
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The run queues this worker may claim from; empty: any (the platform's own workers).  A host an
    # organizer attaches for its challenge's own queue gets only that queue, so its token can never
    # claim another challenge's runs (their systems and hidden inputs).
    queues = models.JSONField(default=list, blank=True)

    def __str__(self) -> str:
        return self.name

    def may_claim(self, queue: str) -> bool:
        return not self.queues or queue in self.queues


class DialogAnswers(models.Model):
    """What a system answered in one dialog of a run in the interactive protocol, turn by turn, as
    the trusted side received it (``dialog_runs``): the record the run is scored from.

    A turn's gold answer is revealed to the compute worker only in the reply to its answer, which
    is stored first, in order: what was answered before a gold answer was seen cannot change, and
    a run that ends early keeps what it answered.  ``dataset`` and ``dialog`` are positions (the
    run's datasets, the dialogs of its inputs): a worker never names a dataset or a dialog by id.
    """

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="dialog_answers")
    attempt = models.PositiveIntegerField()
    mode = models.CharField(max_length=16)
    dataset = models.PositiveIntegerField()
    dialog = models.PositiveIntegerField()
    answers = models.JSONField(default=list)  # [{"answer", "yesno", "followup"}], turn by turn
    latencies_ms = models.JSONField(default=list)  # as the worker measured each, send -> answer

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "attempt", "mode", "dataset", "dialog"],
                                               name="dialoganswers_unique")]


class CampaignRun(models.Model):
    """One archived system an organizer asked to run again in an evaluation campaign
    (``submissions.campaigns``): the run it became, or why it could not run again.

    The re-run is a submission of the campaign's phase, of the source's team, pinned to the source's
    upload (the same stored file, its sha256 and image id): the whole run, scoring and sealing path of
    any submission serves it, and the source phase's rows are not touched.
    """

    phase = models.ForeignKey("challenges.Phase", on_delete=models.CASCADE, related_name="campaign_runs")
    source = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="campaign_runs")
    # Null when it could not run again (``problem`` says why).
    run = models.OneToOneField(Submission, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="campaign_source")
    problem = models.TextField(blank=True)
    # The limits that differ from the source run's, {name: [source, campaign]}: what the organizer changed.
    limits_changed = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["phase", "created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["phase", "source"], name="campaignrun_unique")]

    def __str__(self) -> str:
        return f"campaign run of submission {self.source_id} in {self.phase_id}"
