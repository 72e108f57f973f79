"""The internal API compute workers talk to (``/internal/v1/``): thin views over ``worker_api``.

Every call carries a worker's token (``Authorization: Bearer ...``); a call about a run that is
not the token's current attempt gets 404, whatever the reason, so a token learns nothing of runs
that are not its own.  Not for people and not in the public API schema; a deployment may serve
it on an address only compute hosts reach.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.contract import inputs_tar_stream
from leaderboard.submissions import dialog_runs, worker_api
from leaderboard.submissions.lifecycle import (
    submission_run_fail,
    submission_run_heartbeat,
    submission_run_platform_failure,
)
from leaderboard.submissions.models import Submission, WorkerToken
from scoring.dialogs import Revealed

# A FileResponse is a streaming response, no HttpResponse: views return the base of both.
View = Callable[..., HttpResponseBase]


def _not_found() -> JsonResponse:
    return JsonResponse({"detail": "no such run for this worker"}, status=404)


def _bearer_token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme == "Bearer" else ""


def worker_required(view: View) -> View:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        worker = worker_api.worker_token_authenticate(_bearer_token(request))
        if worker is None:
            return JsonResponse({"detail": "a valid worker token is required"}, status=401)
        return view(request, worker, *args, **kwargs)

    # The route audit reads it; a function's type has no such attribute, its __dict__ takes any.
    wrapped.__dict__["worker_token_required"] = True
    return csrf_exempt(wrapped)


def run_required(view: View) -> View:
    """The run of the URL, if it is this worker's current attempt; else 404."""

    @wraps(view)
    def wrapped(request: HttpRequest, worker: WorkerToken, submission_id: int, attempt: int,
                *args: Any, **kwargs: Any) -> HttpResponseBase:
        submission = worker_api.submission_of_worker(worker=worker, submission_id=submission_id, attempt=attempt)
        if submission is None:
            return _not_found()
        return view(request, worker, submission, *args, **kwargs)

    return wrapped


def _json_body(request: HttpRequest) -> dict[str, Any] | None:
    try:
        body = json.loads(request.body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return body if isinstance(body, dict) else None


@require_POST
@worker_required
def run_claim(request: HttpRequest, worker: WorkerToken) -> HttpResponse:
    body = _json_body(request)
    if body is None or not isinstance(body.get("queue"), str) or not isinstance(body.get("instance"), str):
        return JsonResponse({"detail": "expected {queue, instance}"}, status=400)
    if not worker.may_claim(body["queue"]):
        # The run stays for a worker of that queue; this one is told why, in its log.
        return JsonResponse({"detail": f"this worker's token may claim runs of {', '.join(worker.queues)} only, "
                                       f"not of {body['queue']!r}"}, status=403)
    # The host's own words for its hardware (the compute worker's READERBOARD_HARDWARE_CLASS), shown
    # beside its runs' figures on budget boards; optional (older workers do not send it).
    hardware = body.get("hardware_class")
    claim = worker_api.submission_run_claim_next(queue=body["queue"],
                                              worker=worker_api.worker_label(worker, body["instance"]),
                                              hardware_class=hardware[:60] if isinstance(hardware, str) else "")
    if claim.plan is None:
        return JsonResponse({"ticket": None, "retry_after": worker_api.CLAIM_RETRY_S})
    try:
        ticket = worker_api.run_ticket_build(claim.plan)
    except ServiceError as exc:
        # Inputs missing on the platform's own storage: its fault, retried later (queued again, due
        # after its back-off), never the team's.
        submission_run_platform_failure(claim.plan.submission_id, attempt=claim.plan.attempt, reason=str(exc))
        return JsonResponse({"ticket": None, "retry_after": worker_api.CLAIM_RETRY_S})
    return JsonResponse({"ticket": ticket.as_json()})


@require_POST
@worker_required
def run_wait(request: HttpRequest, worker: WorkerToken) -> HttpResponse:
    """{queues}: held until a run of those queues may be claimed, for at most ``worker_api.CLAIM_WAIT_S``;
    answers {retry_after}: 0 to claim now, more to wait that long first (no wait was possible)."""
    body = _json_body(request)
    queues = body.get("queues") if body is not None else None
    if not isinstance(queues, list) or not queues or not all(isinstance(q, str) for q in queues):
        return JsonResponse({"detail": "expected {queues: [names]}"}, status=400)
    refused = [q for q in queues if not worker.may_claim(q)]
    if refused:
        return JsonResponse({"detail": f"this worker's token may claim runs of {', '.join(worker.queues)} only, "
                                       f"not of {', '.join(map(repr, refused))}"}, status=403)
    return JsonResponse({"retry_after": worker_api.run_queues_wait(queues=list(dict.fromkeys(queues)))})


@require_GET
@worker_required
@run_required
def run_input(request: HttpRequest, worker: WorkerToken, submission: Submission, index: int) -> HttpResponseBase:
    path = worker_api.run_input_path(submission=submission, index=index)
    if path is None:
        return _not_found()
    return FileResponse(open(path, "rb"), content_type="application/octet-stream")  # noqa: SIM115 (closed by Django)


@require_GET
@worker_required
@run_required
def run_inputs(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponseBase:
    """All of the run's inputs in one response (``sandbox.contract.inputs_tar_stream``), streamed."""
    paths = worker_api.run_input_paths(submission=submission)
    if paths is None:
        return _not_found()
    return StreamingHttpResponse(inputs_tar_stream(paths), content_type="application/x-tar")


@require_GET
@worker_required
@run_required
def run_system_file(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponseBase:
    if not submission.file:
        return _not_found()
    return FileResponse(submission.file.open("rb"), content_type="application/octet-stream")


@require_POST
@worker_required
@run_required
def run_heartbeat(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponse:
    return JsonResponse({"keep": submission_run_heartbeat(submission.pk, attempt=submission.attempts)})


@require_POST
@worker_required
@run_required
def run_live_log(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponse:
    """{log, notes}: what the system printed so far (the worker's whole capture, capped as the final
    log is), while the run is this worker's current attempt; who may read it is the platform's call."""
    body = _json_body(request)
    if body is None:
        return JsonResponse({"detail": "expected {log, notes}"}, status=400)
    try:
        kept = worker_api.submission_run_live_log_store(submission=submission, log=body.get("log"),
                                                        notes=body.get("notes", []))
    except worker_api.LiveLogRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=400)
    if not kept:  # the attempt ended between the check and the write: as any call about a past attempt
        return _not_found()
    return JsonResponse({"kept": True})


@require_POST
@worker_required
@run_required
def run_outcome(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponse:
    try:
        outcome = json.loads(request.POST.get("outcome", ""))
    except json.JSONDecodeError:
        return JsonResponse({"detail": "the outcome is not JSON"}, status=400)
    if not isinstance(outcome, dict):
        return JsonResponse({"detail": "the outcome is not a JSON object"}, status=400)
    try:
        with transaction.atomic():
            worker_api.submission_run_result_store(submission=submission, outcome=outcome,
                                                outputs={name: files[-1] for name, files in request.FILES.lists()
                                                         if files})
    except worker_api.ResultRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=400)
    return JsonResponse({"accepted": True}, status=202)


@require_POST
@worker_required
@run_required
def run_failure(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponse:
    body = _json_body(request)
    if body is None or not isinstance(body.get("participant"), bool) or not isinstance(body.get("reason"), str):
        return JsonResponse({"detail": "expected {participant, reason, detail}"}, status=400)
    reason, detail = body["reason"][:5000], str(body.get("detail") or "")[:20000]
    if body["participant"]:
        submission_run_fail(submission.pk, attempt=submission.attempts, reason=reason)
        return JsonResponse({"requeued": False})
    requeued = submission_run_platform_failure(submission.pk, attempt=submission.attempts, reason=reason,
                                               detail=detail)
    return JsonResponse({"requeued": requeued})


@dataclass(frozen=True)
class _TurnCall:
    mode: str
    dataset: int
    dialog: int
    turn: int | None  # None: open the dialog
    answers: list[Any]
    latencies_ms: list[Any]


def _turn_call(request: HttpRequest) -> _TurnCall | JsonResponse:
    body = _json_body(request)
    positions = [body.get(key) if body else None for key in ("dataset", "dialog")]
    if body is None or not isinstance(body.get("mode"), str) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in positions):
        return JsonResponse({"detail": "expected {mode, dataset, dialog, turn, answer, latency_ms}"}, status=400)
    turn = body.get("turn")
    if turn is not None and (not isinstance(turn, int) or isinstance(turn, bool)):
        return JsonResponse({"detail": "'turn' is a turn's position (from 0), or null to open a dialog"}, status=400)
    if isinstance(body.get("answers"), list):  # turns ``turn``, ``turn + 1``... at once
        answers, latencies = body["answers"], body.get("latencies_ms")
        latencies = latencies if isinstance(latencies, list) else []
    else:
        answers, latencies = [body.get("answer")], [body.get("latency_ms")]
    return _TurnCall(body["mode"], body["dataset"], body["dialog"], turn, answers, latencies)


def _revealed(revealed: Revealed) -> JsonResponse:
    return JsonResponse({"answered": revealed.answered, "upcoming": revealed.upcoming})


@require_POST
@csrf_exempt
def run_dialog_turn(request: HttpRequest, submission_id: int, attempt: int) -> HttpResponseBase:
    """A turn of the interactive protocol: {mode, dataset, dialog, turn, answer, latency_ms} records
    the answer and replies with the gold the mode reveals; {..., turn, answers, latencies_ms} records
    several turns from ``turn`` on; ``turn`` null opens a dialog (nothing is recorded).  A turn the
    run cannot take gets 409 and its reason.

    The usual call is answered in one statement that checks the worker's token and the run as it
    writes (``dialog_runs.dialog_turns_append``); every other (a first call, a retry, a refusal, a
    token that is not the run's) goes the way of any internal call, through ``worker_required`` and
    ``run_required``, and is answered there."""
    call = _turn_call(request)
    token = _bearer_token(request)
    if isinstance(call, _TurnCall) and token:

        def run() -> QuerySet[Submission]:
            return worker_api.run_of_token(token=token, submission_id=submission_id, attempt=attempt)

        if call.turn is None:
            fast = dialog_runs.dialog_opened(run=run, caller=token, submission_id=submission_id, attempt=attempt,
                                             mode=call.mode, dataset=call.dataset, dialog=call.dialog)
        else:
            fast = dialog_runs.dialog_turns_append(
                run=run, caller=token, submission_id=submission_id, attempt=attempt, mode=call.mode, dataset=call.dataset,
                dialog=call.dialog, first=call.turn, answers=call.answers, latencies_ms=call.latencies_ms)
        if fast is not None:
            return _revealed(fast)
    return _run_dialog_turn_checked(request, submission_id, attempt)


# No call is answered without a worker's token: the fast path checks it in its statement, the rest
# goes through worker_required (the route audit reads the mark).
run_dialog_turn.__dict__["worker_token_required"] = True


@worker_required
@run_required
def _run_dialog_turn_checked(request: HttpRequest, worker: WorkerToken, submission: Submission) -> HttpResponse:
    call = _turn_call(request)
    if isinstance(call, JsonResponse):
        return call
    try:
        if call.turn is None:
            revealed = dialog_runs.dialog_open(submission=submission, mode=call.mode, dataset=call.dataset,
                                               dialog=call.dialog)
        else:
            revealed = dialog_runs.dialog_turns_answer(
                submission=submission, mode=call.mode, dataset=call.dataset, dialog=call.dialog, first=call.turn,
                answers=call.answers, latencies_ms=call.latencies_ms)
    except dialog_runs.TurnRefused as exc:
        return JsonResponse({"detail": str(exc)}, status=409)
    return _revealed(revealed)
