"""Turn-by-turn evaluation of conversational QA (Siblini et al.): what a system is told at each turn.

A system in the interactive protocol answers one request at a time; this module decides what each
request holds, from the gold dialogs and the answers the system gave so far, for each mode:

* ``gold`` (w/ TF): earlier turns with their gold answers (the usual QuAC/CoQA protocol);
* ``own`` (w/o TF, Algorithm 1 of the paper): earlier turns with the system's own answers;
* ``adversarial`` (w/ Adv): the gold history, plus the current turn's gold answer presented as the
  answer of an earlier turn (the paper marks the current answer's tokens as history: a model that
  filters out what was already answered loses exactly these);
* ``single``: one question per request, no history (MRQA's prediction-server protocol).

A :class:`Session` hands out the requests of one dialog in order and takes the answers back; it
never builds a later turn's request before the current one is answered, and never puts a turn's
gold answer into a request before that turn was answered.  ``best_reachable`` is the paper's
BEST analysis (Table 2): the F1 of gold answers as predictions, and with the tokens of the six
previous answers filtered out.  No Django; ``python -m scoring dialogs ...`` is not needed: the
container side lives in ``workers``.
"""

from __future__ import annotations

import enum
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scoring.coqa import coqa_gold, evaluate_coqa
from scoring.errors import InputFormatError
from scoring.io import iter_json_lines, load_json
from scoring.quac import QuacPrediction, evaluate_quac, quac_dialogs
from scoring.text import normalize_answer

CANNOT_ANSWER = "CANNOTANSWER"
# The paper's post-filtering window: tokens of the answers of the six previous turns.
FILTER_WINDOW = 6


# The formats whose datasets are dialogs (scoring.inputs' names, the platform's metric suites).
DIALOG_FORMATS = frozenset({"quac", "coqa"})
# The formats whose questions stand alone: asked one per request, each a dialog of one turn, in the
# single-question mode only (MRQA 2019's prediction server).
QUESTION_FORMATS = frozenset({"mrqa"})


class Mode(enum.StrEnum):
    GOLD = "gold"
    OWN = "own"
    ADVERSARIAL = "adversarial"
    SINGLE = "single"

    @property
    def label(self) -> str:
        """As people read it (the paper's w/ TF, w/o TF, w/ Adv; MRQA's prediction server)."""
        return {"gold": "gold history", "own": "own history", "adversarial": "adversarial history",
                "single": "single question"}[self.value]


@dataclass(frozen=True)
class Turn:
    qid: str
    question: str
    answers: list[str]  # the gold texts; the first is the one shown as history
    yesno: str = ""  # QuAC's labels ("y", "n", "x"; "y", "n", "m"), "" for CoQA
    followup: str = ""


@dataclass(frozen=True)
class Dialog:
    dialog_id: str
    passage: str
    turns: list[Turn]


def quac_protocol_dialogs(dataset: Any, *, path: str = "dataset") -> list[Dialog]:
    """QuAC dialogs with their questions' texts; the answer shown as history is ``orig_answer``
    (what the dialog's teacher said), else the first reference."""
    quac_dialogs(dataset, path=path)  # the scorer's own checks first: one format, one set of errors
    dialogs = []
    for article in dataset["data"]:
        for par in article["paragraphs"]:
            turns = []
            for qa in par["qas"]:
                if not isinstance(qa.get("question"), str):
                    raise InputFormatError("a QuAC question needs its 'question' text", path=path, qid=qa["id"])
                refs = [a["text"] for a in qa["answers"]]
                orig = qa.get("orig_answer", {}).get("text") if isinstance(qa.get("orig_answer"), dict) else None
                shown = orig if isinstance(orig, str) else (refs[0] if refs else CANNOT_ANSWER)
                turns.append(Turn(qa["id"], qa["question"], [shown, *[r for r in refs if r != shown]],
                                  str(qa["yesno"]), str(qa["followup"])))
            dialogs.append(Dialog(par["id"], par["context"], turns))
    return dialogs


def coqa_protocol_dialogs(dataset: Any, *, path: str = "dataset") -> list[Dialog]:
    """CoQA stories as dialogs: turn ids ``<story id>_<turn id>`` (as the scorer keys them), the
    main answer first, then the additional answers of that turn."""
    stories = dataset.get("data") if isinstance(dataset, dict) else None
    if not isinstance(stories, list):
        raise InputFormatError("expected a CoQA dataset: a JSON object with a 'data' list", path=path)
    dialogs = []
    for s, story in enumerate(stories):
        try:
            extra = story.get("additional_answers") or {}
            turns = []
            for question, answer in zip(story["questions"], story["answers"], strict=True):
                turn_id = question["turn_id"]
                others = [a[turn_id - 1]["input_text"] for a in extra.values() if len(a) >= turn_id]
                turns.append(Turn(f"{story['id']}_{turn_id}", question["input_text"],
                                  [answer["input_text"], *others]))
            dialogs.append(Dialog(str(story["id"]), story["story"], turns))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise InputFormatError(f"data[{s}] is not a CoQA story with questions and answers ({exc})",
                                   path=path) from None
    return dialogs


def input_dialogs(fmt: str, inputs: Any, *, path: str = "inputs") -> list[Dialog]:
    """The dialogs of an answer-free inputs file (``scoring.inputs``' ``quac`` or ``coqa``): the same
    dialogs, turns and order as the gold's protocol dialogs, without a single answer.  This is all a
    compute worker holds; gold reaches its sessions through a :class:`GoldSource`, turn by turn."""
    try:
        if fmt == "quac":
            return [Dialog(str(par["id"]), par["context"], [Turn(str(qa["id"]), qa["question"], []) for qa in par["qas"]])
                    for article in inputs["data"] for par in article["paragraphs"]]
        if fmt == "coqa":
            return [Dialog(str(story["id"]), story["story"],
                           [Turn(f"{story['id']}_{q['turn_id']}", q["input_text"], []) for q in story["questions"]])
                    for story in inputs["data"]]
    except (KeyError, TypeError) as exc:
        raise InputFormatError(f"not an answer-free {fmt} inputs file ({exc})", path=path) from None
    raise InputFormatError(f"no dialogs in the {fmt!r} format (quac, coqa)", path=path)


def dialogs_of_file(fmt: str, path: str | os.PathLike[str], *, gold: bool) -> list[Dialog]:
    """The dialogs of a file on disk: a gold file (``gold``) or its answer-free inputs, in the file's
    order either way, so that a dialog's position in one is its position in the other."""
    name = os.fspath(path)
    if fmt in DIALOG_FORMATS:
        document = load_json(name)
        return protocol_dialogs(fmt, document, path=name) if gold else input_dialogs(fmt, document, path=name)
    if fmt == "mrqa":
        return _mrqa_dialogs(name, gold=gold)
    raise InputFormatError(f"no dialogs or questions in the {fmt!r} format", path=name)


def _mrqa_dialogs(path: str, *, gold: bool) -> list[Dialog]:
    """Each question of an MRQA file (gzipped JSON lines, a header first) as a dialog of one turn."""
    dialogs = []
    for number, obj in iter_json_lines(path):
        if isinstance(obj, dict) and "header" in obj:
            continue
        try:
            for qa in obj["qas"]:
                answers = [str(a) for a in qa["answers"]] if gold else []
                dialogs.append(Dialog(str(qa["qid"]), obj["context"], [Turn(str(qa["qid"]), qa["question"], answers)]))
        except (KeyError, TypeError) as exc:
            raise InputFormatError(f"not an MRQA context line ({exc})", path=path, line=number) from None
    return dialogs


def protocol_dialogs(fmt: str, gold: Any, *, path: str = "dataset") -> list[Dialog]:
    """The gold dialogs of a ``quac`` or ``coqa`` dataset, in the order of :func:`input_dialogs`."""
    if fmt == "quac":
        return quac_protocol_dialogs(gold, path=path)
    if fmt == "coqa":
        return coqa_protocol_dialogs(gold, path=path)
    raise InputFormatError(f"no dialogs in the {fmt!r} format (quac, coqa)", path=path)


class ProtocolError(Exception):
    """A response the protocol cannot take: ``verdict`` in a fixed vocabulary, ``message`` for people."""

    def __init__(self, verdict: str, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


@dataclass(frozen=True)
class Revealed:
    """What the gold side hands back once a turn is answered: that turn's gold answer (gold and
    adversarial modes) and the next turn's (adversarial mode only, where it is shown as history)."""

    answered: str | None = None
    upcoming: str | None = None


class GoldSource(Protocol):
    """Where a session's gold answers come from, one turn at a time.

    ``opening`` is asked before a dialog's first request and ``answered`` after each answer, with
    that answer: a source reveals a turn's gold only once the turn is answered, in order.  On the
    platform the source is the trusted side (the compute worker holds no gold: it posts each answer
    and gets back what the mode allows); :class:`DialogGold` is the same rule over gold in memory.
    """

    def opening(self, dialog: int) -> Revealed: ...

    def answered(self, dialog: int, turn: int, answer: Mapping[str, str], latency_s: float | None = None) -> Revealed:
        ...


def reveal(mode: Mode, dialog: Dialog, answered: int) -> Revealed:
    """What ``mode`` reveals once the first ``answered`` turns of ``dialog`` are answered
    (``answered`` 0: before the first request)."""
    turns = dialog.turns
    shown = turns[answered - 1].answers[0] if answered and mode in (Mode.GOLD, Mode.ADVERSARIAL) else None
    upcoming = turns[answered].answers[0] if mode == Mode.ADVERSARIAL and answered < len(turns) else None
    return Revealed(shown, upcoming)


class DialogGold:
    """Gold dialogs in memory as a :class:`GoldSource`, holding sessions to the order of turns."""

    def __init__(self, dialogs: Sequence[Dialog], mode: Mode) -> None:
        self.dialogs = dialogs
        self.mode = mode
        self.progress: dict[int, int] = {}

    def opening(self, dialog: int) -> Revealed:
        return reveal(self.mode, self.dialogs[dialog], self.progress.get(dialog, 0))

    def answered(self, dialog: int, turn: int, answer: Mapping[str, str], latency_s: float | None = None) -> Revealed:
        if turn != self.progress.get(dialog, 0):
            raise ValueError(f"dialog {dialog}: turn {turn + 1} answered out of order")
        self.progress[dialog] = turn + 1
        return reveal(self.mode, self.dialogs[dialog], turn + 1)


@dataclass
class Session:
    """One dialog under one mode, turn by turn: ``request()`` then ``respond()``, until ``request()``
    is None.  ``answers`` holds what the system answered, by turn id, in order.

    The session's own dialog need not hold gold answers (the compute worker's are built from the
    answer-free inputs): the gold it shows comes from ``source``, which reveals it turn by turn.
    Without a source it is the dialog's own gold, under the same rule.
    """

    dialog: Dialog
    mode: Mode
    source: GoldSource | None = None
    index: int = 0  # the dialog's position in its dataset: how the source knows it
    answers: dict[str, dict[str, str]] = field(default_factory=dict)
    shown: list[str] = field(default_factory=list)  # gold answers revealed so far, by turn
    upcoming: str | None = None

    def __post_init__(self) -> None:
        if self.source is None:
            self.source, self.index = DialogGold([self.dialog], self.mode), 0
        self._opened = False

    @property
    def position(self) -> int:
        return len(self.answers)

    def request(self) -> dict[str, Any] | None:
        if self.position >= len(self.dialog.turns):
            return None
        assert self.source is not None
        if not self._opened:
            self._opened = True
            self.upcoming = self.source.opening(self.index).upcoming
        turn = self.dialog.turns[self.position]
        request: dict[str, Any] = {"dialog": self.dialog.dialog_id, "turn": self.position + 1, "id": turn.qid,
                                   "question": turn.question}
        if self.position == 0 or self.mode == Mode.SINGLE:
            request["passage"] = self.dialog.passage
        if self.mode != Mode.SINGLE:
            request["history"] = self._history(turn)
        return request

    def _history(self, current: Turn) -> list[dict[str, str]]:
        earlier = self.dialog.turns[:self.position]
        if self.mode == Mode.OWN:
            return [{"question": t.question, "answer": self.answers[t.qid]["answer"]} for t in earlier]
        # Gold answers of turns the system has answered already (the source reveals nothing else):
        # never the current turn's, but in the adversarial mode, where that is the point, and only
        # as an earlier turn's answer.
        history = [{"question": t.question, "answer": shown} for t, shown in zip(earlier, self.shown, strict=True)]
        if self.mode == Mode.ADVERSARIAL:
            if self.upcoming is None:
                raise ValueError(f"turn {self.position + 1}: the gold source revealed no current answer")
            planted = {"question": earlier[-1].question if earlier else current.question, "answer": self.upcoming}
            history.append(planted)
        return history

    def respond(self, response: Any, latency_s: float | None = None) -> dict[str, str]:
        """Take the system's response to the current request (given ``latency_s`` after it); ProtocolError
        if it is not one."""
        # Messages name the turn by its position, never by its id: on hidden data an id is hidden data.
        turn = self.dialog.turns[self.position]
        where = f"turn {self.position + 1}"
        if not isinstance(response, dict):
            raise ProtocolError("wrong_shape", f"{where}: a response is a JSON object, not "
                                               f"{type(response).__name__}")
        if response.get("id") != turn.qid:
            raise ProtocolError("wrong_id", f"{where}: the response is for another id than the request's")
        answer = response.get("answer")
        if not isinstance(answer, str):
            raise ProtocolError("wrong_shape", f"{where}: 'answer' must be a string")
        taken = {"answer": answer}
        for key, allowed in (("yesno", {"y", "n", "x"}), ("followup", {"y", "n", "m"})):
            value = response.get(key, "x" if key == "yesno" else "n")
            if value not in allowed:
                raise ProtocolError("wrong_shape", f"{where}: {key!r} must be one of {sorted(allowed)}")
            taken[key] = value
        assert self.source is not None
        # The answer is handed to the source before anything of this turn's gold is known here.
        revealed = self.source.answered(self.index, self.position, taken, latency_s)
        self.answers[turn.qid] = taken
        if self.mode in (Mode.GOLD, Mode.ADVERSARIAL):
            if revealed.answered is None:
                raise ValueError(f"{where}: the gold source revealed no answer for an answered turn")
            self.shown.append(revealed.answered)
        self.upcoming = revealed.upcoming
        return taken


def quac_predictions_of(sessions: Sequence[Session]) -> dict[str, dict[str, QuacPrediction]]:
    """The sessions' answers as the QuAC scorer takes them (dialog id -> qid -> prediction)."""
    return {s.dialog.dialog_id: {qid: QuacPrediction(a["answer"], a["yesno"], a["followup"])
                                 for qid, a in s.answers.items()} for s in sessions}


def coqa_predictions_of(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    """The sessions' answers as CoQA prediction records ({id, turn_id, answer})."""
    records = []
    for s in sessions:
        for qid, a in s.answers.items():
            story, _, turn = qid.rpartition("_")
            records.append({"id": story, "turn_id": int(turn), "answer": a["answer"]})
    return records


def _filtered(span: str, previous: Sequence[str]) -> str:
    """``span`` without the tokens of ``previous`` answers ("CANNOTANSWER" is never filtered)."""
    if span == CANNOT_ANSWER:
        return span
    seen = {tok for answer in previous if answer != CANNOT_ANSWER for tok in normalize_answer(answer).split()}
    return " ".join(tok for tok in span.split() if normalize_answer(tok) not in seen or not normalize_answer(tok))


def best_reachable_of(fmt: str, dataset: Any, *, seed: int = 0, window: int = FILTER_WINDOW) -> dict[str, float]:
    """BEST and BEST with post-filtering of a ``quac`` or ``coqa`` gold dataset (see ``best_reachable``).

    For CoQA the prediction is one of a turn's answers chosen at random, scored by the official
    scorer (which compares it with the others, leaving one out), and the filter removes the tokens
    of the previous ``window`` turns' main answers (what a gold history shows).
    """
    if fmt == "quac":
        return best_reachable(dataset, seed=seed, window=window)
    if fmt != "coqa":
        raise InputFormatError(f"no dialogs in the {fmt!r} format (quac, coqa)")
    rng = random.Random(seed)
    gold = coqa_gold(dataset)
    best: dict[Any, str] = {}
    filtered: dict[Any, str] = {}
    shown: dict[Any, list[str]] = {}  # story id -> the main answers of its turns so far
    for key, golds in gold.turns.items():
        earlier = shown.setdefault(key[0], [])
        span = rng.choice(golds) if golds else ""
        best[key] = span
        filtered[key] = _filtered(span, earlier[-window:])
        earlier.append(golds[0] if golds else "")

    def f1(predictions: Mapping[Any, str]) -> float:
        return float(evaluate_coqa(gold, predictions).metrics["overall"]["f1"])

    return {"best_f1": f1(best), "best_filtered_f1": f1(filtered)}


def best_reachable(dataset: Any, *, seed: int = 0, window: int = FILTER_WINDOW) -> dict[str, float]:
    """The paper's BEST and BEST with post-filtering (Table 2: 95.6 and 92.7 on QuAC dev), from gold alone.

    BEST predicts, for every question, one of its references chosen at random (seeded: the paper
    chose at random too, which is why BEST is under 100) with the gold yes/no and follow-up labels.
    The filtered variant removes from each prediction the tokens of the previous ``window`` turns'
    answers (their ``orig_answer``, as a gold history shows them), except "CANNOTANSWER".
    """
    rng = random.Random(seed)
    dialogs = quac_protocol_dialogs(dataset)
    scored = quac_dialogs(dataset)
    best: dict[str, dict[str, QuacPrediction]] = {}
    filtered: dict[str, dict[str, QuacPrediction]] = {}
    for dialog, gold in zip(dialogs, scored, strict=True):
        best[dialog.dialog_id], filtered[dialog.dialog_id] = {}, {}
        for i, (turn, question) in enumerate(zip(dialog.turns, gold.questions, strict=True)):
            refs = question.refs or [CANNOT_ANSWER]
            span = rng.choice(refs)
            previous = [t.answers[0] for t in dialog.turns[max(0, i - window):i]]
            best[dialog.dialog_id][turn.qid] = QuacPrediction(span, turn.yesno, turn.followup)
            filtered[dialog.dialog_id][turn.qid] = QuacPrediction(_filtered(span, previous), turn.yesno,
                                                                  turn.followup)
    return {"best_f1": _f1(scored, best), "best_filtered_f1": _f1(scored, filtered)}


def _f1(dialogs: Any, predictions: Mapping[str, Mapping[str, QuacPrediction]]) -> float:
    return float(evaluate_quac(dialogs, predictions).metrics["f1"])
