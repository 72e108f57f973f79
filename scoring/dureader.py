"""DuReader 2.0 / MRC2018 baseline evaluation: ``utils/dureader_eval.py`` (spec 4).

``python -m scoring dureader PRED.json REF.json TASK`` prints what the official
script prints (``{"data": [...], "errorCode": 0, "errorMsg": "success"}``, the
same entries in the same order), at full precision unless
``--official-rounding`` (``round(100 * x, 2)``) is given.  The task name is
lower-cased and stripped of ``_`` as the official does (``Yes_No`` is ``yesno``).

What is reproduced (spec 4.2-4.7): character-level corpus BLEU-4 of
coco-caption with its pseudo-smoothing and closest-length brevity penalty;
per-question ROUGE-L with beta = 1.2 and P, R maximised separately over the
references, averaged (NaN over an empty set); yes/no pseudo-questions
``<qid>_<label>``; entity P/R/F1 over all reference questions; the three
sources for ``main`` and ``all``.

Errors.  The official script reports some problems *in band*: it prints
``{"errorMsg": "<message>", "errorCode": 1, "data": []}`` and exits 0
(AssertionError and ValueError: a line that is not JSON, a missing
``question_id`` / ``yesno_answers`` / ``entity_answers``, a duplicated
``question_id``, a prediction with several entity lists, a predicted yes/no
label the reference does not have, an unknown task).  We stop with exit
status 1 and one line naming the file, line and question id.  With
``--in-band-errors`` the official error JSON is printed on stdout instead,
with exit status 0 as the official does, and the explanatory line goes to
stderr.  Inputs the official script crashes on (a missing ``question_type``,
``answers`` or ``source``, answers that are not strings...) are plain errors
in both modes.

Beyond the official script: ``--strict`` rejects a reference question with no
prediction and a prediction for an unknown question (otherwise both are
reported as warnings and handled as the official does: scored as an empty
answer, ignored); a reference file with no question at all is an error, not
a row of NaN.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from scoring.charmetrics import (
    BleuStats,
    char_bleu_stats_batch,
    coco_bleu,
    coco_rouge_l,
    is_string_list,
    mean_or_nan,
    strip_whitespace,
    sum_bleu_stats,
)
from scoring.cli import add_common_options
from scoring.errors import InputFormatError
from scoring.io import decode_text, gc_paused, parse_json, read_bytes
from scoring.result import EvalResult
from scoring.text import overlap_f1

TASKS: tuple[str, ...] = ("main", "all", "yesno", "entity", "description")
SOURCES: tuple[str, ...] = ("both", "search", "zhidao")
YESNO_LABELS: tuple[str, ...] = ("Yes", "No", "Depends")
EMPTY = ""

# At most this many ids are listed in a warning; the rest are counted.
MAX_LISTED_IDS = 5


class OfficialInBandError(InputFormatError):
    """A problem the official script reports in band (errorCode 1) rather than by crashing.

    ``official`` is the official ``errorMsg`` text, for ``--in-band-errors``.
    """

    def __init__(self, message: str, *, official: str, path: str | None = None,
                 line: int | None = None, qid: str | None = None) -> None:
        super().__init__(message, path=path, line=line, qid=qid)
        self.official = official


# --------------------------------------------------------------------------- reading


@dataclass(slots=True)
class DuReaderQuestion:
    """One line of a DuReader prediction or reference file, checked.

    ``question_type`` and ``source`` are kept as given (the official script
    only compares them with ``'ENTITY'``, ``'search'``...); ``source`` is None
    for predictions.  ``where``/``line`` locate the line for messages.
    """

    qid: Any
    question_type: Any
    answers: list[str]
    yesno_answers: list[Any]
    entity_answers: list[Any]
    source: Any = None
    where: str = ""
    line: int | None = None


def iter_json_lines_official(path: str | os.PathLike[str], *, in_band: bool) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(where, line_number, object)`` for every line, as the official ``read_file`` reads them.

    A ``.zip`` file is read member by member (``where`` is ``archive.zip:member``);
    other files may be gzipped.  Lines end at ``\\n``, ``\\r\\n`` or ``\\r``
    (text-mode universal newlines).  Unlike most JSON-lines readers a blank
    line is an error: the official ``json.loads(line.strip())`` fails on it.
    ``in_band`` chooses whether a bad line is an :class:`OfficialInBandError`
    (DuReader) or a plain :class:`InputFormatError` (MRC2018, which crashes).
    """
    name = os.fspath(path)
    decode = _DECODER.decode
    for where, text in _official_texts(name):
        if "\r" in text:  # universal newlines, as a text-mode read
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        for number, raw in enumerate(lines, start=1):
            stripped = raw.strip()
            try:
                if not stripped:
                    raise ValueError("blank line")
                obj = decode(stripped)
            except (ValueError, RecursionError):
                raise _bad_line(stripped, where, number, in_band=in_band) from None
            yield where, number, obj


_DECODER = json.JSONDecoder()


def _bad_line(stripped: str, where: str, number: int, *, in_band: bool) -> InputFormatError:
    if not stripped:
        message = "blank line; every line must be one JSON object (the official script rejects it)"
    else:
        try:
            parse_json(stripped, where, line_offset=number - 1)
            message = "invalid JSON"
        except InputFormatError as exc:
            message = exc.message
    if in_band:
        return OfficialInBandError(message, official="Every line of data should be legal json",
                                   path=where, line=number)
    return InputFormatError(message, path=where, line=number)


def _official_texts(name: str) -> Iterator[tuple[str, str]]:
    if not name.endswith(".zip"):
        yield name, decode_text(read_bytes(name), name)
        return
    try:
        archive = zipfile.ZipFile(name, "r")
    except FileNotFoundError:
        raise InputFormatError("file not found", path=name) from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputFormatError(f"not a readable zip archive ({exc})", path=name) from None
    with archive:
        for member in archive.namelist():
            where = f"{name}:{member}"
            try:
                data = archive.read(member)
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                raise InputFormatError(f"cannot read this zip member ({exc})", path=where) from None
            yield where, decode_text(data, where)


_YESNO_NOT_LIST = (
    "'yesno_answers' field must be a list, if the 'question_type' is not\n"
    "            'YES_NO', then this field should be an empty list.\n"
    "            question_id: {}"
)
_ENTITY_NOT_LIST = (
    "'entity_answers' field must be a list, and has at least one element,\n"
    "            which can be a empty list. question_id: {}"
)


def _string_list(value: Any, what: str, *, where: str, line: int, qid: Any) -> list[str]:
    if not is_string_list(value):
        raise InputFormatError(f"field {what!r} should be a list of strings", path=where, line=line, qid=str(qid))
    return value


def _check_qid(qid: Any, *, where: str, line: int) -> None:
    if isinstance(qid, (list, dict)):
        raise InputFormatError("field 'question_id' should be a string or a number, found "
                               f"{'a list' if isinstance(qid, list) else 'an object'}", path=where, line=line)


def question_from_line(obj: Any, *, where: str, line: int, reference: bool) -> DuReaderQuestion:
    """Check one line as ``data_check`` + ``read_file`` do (spec 4.1), in the official order."""
    if not isinstance(obj, dict):
        message = f"expected a JSON object, found {type(obj).__name__}"
        if isinstance(obj, list):  # ``'question_id' in obj`` is then False: an assertion, in band
            raise OfficialInBandError(message, official="Missing 'question_id' field.", path=where, line=line)
        raise InputFormatError(message, path=where, line=line)
    if "question_id" not in obj:
        raise OfficialInBandError("missing field 'question_id'", official="Missing 'question_id' field.",
                                  path=where, line=line)
    qid = obj["question_id"]
    _check_qid(qid, where=where, line=line)
    if "question_type" not in obj:
        # The official assertion message itself reads obj['question_type']: a KeyError crash.
        raise InputFormatError("missing field 'question_type'", path=where, line=line, qid=str(qid))
    if "yesno_answers" not in obj:
        raise OfficialInBandError("missing field 'yesno_answers' (use [] for questions that are not YES_NO)",
                                  official=f"Missing 'yesno_answers' field. question_id: {qid}",
                                  path=where, line=line, qid=str(qid))
    if not isinstance(obj["yesno_answers"], list):
        raise OfficialInBandError("field 'yesno_answers' should be a list", official=_YESNO_NOT_LIST.format(qid),
                                  path=where, line=line, qid=str(qid))
    if "entity_answers" not in obj:
        raise OfficialInBandError("missing field 'entity_answers' (use [[]] when there is no entity)",
                                  official=f"Missing 'entity_answers' field. question_id: {qid}",
                                  path=where, line=line, qid=str(qid))
    entities = obj["entity_answers"]
    if not isinstance(entities, list) or not entities:
        raise OfficialInBandError("field 'entity_answers' should be a non-empty list (of entity lists)",
                                  official=_ENTITY_NOT_LIST.format(qid), path=where, line=line, qid=str(qid))
    if "answers" not in obj:
        raise InputFormatError("missing field 'answers'", path=where, line=line, qid=str(qid))
    answers = _string_list(obj["answers"], "answers", where=where, line=line, qid=qid)
    source = None
    if reference:
        if "source" not in obj:
            raise InputFormatError("missing field 'source' (e.g. \"search\" or \"zhidao\")",
                                   path=where, line=line, qid=str(qid))
        source = obj["source"]
    return DuReaderQuestion(qid, obj["question_type"], answers, obj["yesno_answers"], entities,
                            source, where, line)


def questions_from_lines(rows: Iterable[tuple[str, int, Any]], *, reference: bool) -> dict[Any, DuReaderQuestion]:
    """Build the ``{question_id: question}`` map of one file; a repeated id is an (in-band) error."""
    out: dict[Any, DuReaderQuestion] = {}
    for where, line, obj in rows:
        question = question_from_line(obj, where=where, line=line, reference=reference)
        if question.qid in out:
            first = out[question.qid]
            raise OfficialInBandError(
                f"duplicate question_id (first on line {first.line})",
                official=f"Duplicate question_id: {question.qid}", path=where, line=line, qid=str(question.qid),
            )
        out[question.qid] = question
    return out


def load_dureader(path: str | os.PathLike[str], *, reference: bool) -> dict[Any, DuReaderQuestion]:
    """Load a DuReader prediction (``reference=False``) or reference file: JSON lines, or a .zip of them."""
    return questions_from_lines(iter_json_lines_official(path, in_band=True), reference=reference)


# --------------------------------------------------------------------------- raw DuReader data


def raw_to_reference(raw: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """A reference line from a record of the released DuReader data (``search.dev.json``...).

    The released records have no ``source`` (it is the file name's prefix) and
    carry ``yesno_answers`` / ``entity_answers`` only for YES_NO / ENTITY
    questions; the evaluation needs them on every line.
    """
    answers = list(raw.get("answers") or [])
    entities = raw.get("entity_answers")
    if not entities:
        entities = [[] for _ in answers] or [[]]
    return {
        "question_id": raw["question_id"],
        "question_type": raw["question_type"],
        "source": source,
        "answers": answers,
        "yesno_answers": list(raw.get("yesno_answers") or []),
        "entity_answers": entities,
    }


def raw_to_prediction(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A prediction line that repeats a raw record's reference answers (an oracle, for checks and demos)."""
    entities = raw.get("entity_answers") or [[]]
    return {
        "question_id": raw["question_id"],
        "question_type": raw["question_type"],
        "answers": list(raw.get("answers") or []),
        "yesno_answers": list(raw.get("yesno_answers") or []),
        "entity_answers": [entities[0]],
    }


def source_from_file_name(path: str | os.PathLike[str]) -> str:
    """``search`` or ``zhidao``, from a released file name such as ``zhidao.dev.json``."""
    base = os.path.basename(os.fspath(path))
    for source in ("search", "zhidao"):
        if base.startswith(source):
            return source
    raise InputFormatError("cannot tell the source from the file name (expected search.* or zhidao.*); "
                           "pass source= explicitly", path=os.fspath(path))


def load_raw_dureader(
    path: str | os.PathLike[str], *, source: str | None = None
) -> tuple[dict[Any, DuReaderQuestion], dict[Any, DuReaderQuestion]]:
    """``(oracle predictions, references)`` from a released DuReader data file (JSON lines, documents and all)."""
    name = os.fspath(path)
    src = source if source is not None else source_from_file_name(name)
    pred_rows: list[tuple[str, int, Any]] = []
    ref_rows: list[tuple[str, int, Any]] = []
    for where, line, raw in iter_json_lines_official(name, in_band=False):
        if not isinstance(raw, dict) or "question_id" not in raw or "question_type" not in raw:
            raise InputFormatError("expected a DuReader record with 'question_id' and 'question_type'",
                                   path=where, line=line)
        pred_rows.append((where, line, raw_to_prediction(raw)))
        ref_rows.append((where, line, raw_to_reference(raw, source=src)))
    return (questions_from_lines(pred_rows, reference=False),
            questions_from_lines(ref_rows, reference=True))


# --------------------------------------------------------------------------- what is compared


@dataclass(slots=True)
class _Entry:
    """One key of the official ``pred_dict``/``ref_dict``: a question, or a yes/no pseudo-question."""

    key: Any
    question: DuReaderQuestion
    label: str | None
    cand: str
    refs: list[str]
    missing: bool
    bleu: BleuStats | None = None
    rouge: float = math.nan

    @property
    def kept(self) -> bool:
        # prepare_bleu drops a key whose (raw) reference list is empty or [''] (spec 4.3).
        return bool(self.refs) and self.refs != [EMPTY]


def _main_entry(question: DuReaderQuestion, pred: DuReaderQuestion | None) -> _Entry:
    # get_main_result: the first predicted answer, all reference answers.
    cand = pred.answers[0] if pred is not None and pred.answers else EMPTY
    return _Entry(question.qid, question, None, cand, question.answers or [EMPTY], pred is None)


def _labels(q: DuReaderQuestion, *, side: str) -> list[str]:
    # zip: labels or answers beyond the shorter list are ignored, as in the official.
    labels = [label for label, _ in zip(q.yesno_answers, q.answers, strict=False)]
    for label in labels:
        if not isinstance(label, str):
            raise InputFormatError(f"{side} yes/no label {label!r} should be a string (Yes, No or Depends)",
                                   path=q.where, line=q.line, qid=str(q.qid))
    return labels


def _yesno_entries(question: DuReaderQuestion, pred: DuReaderQuestion | None) -> tuple[list[_Entry], list[str]]:
    """get_yesno_result (spec 4.3): one entry per label, and the prediction's keys the reference lacks."""
    pooled: dict[str, list[str]] = {}
    for label, answer in zip(_labels(question, side="reference"), question.answers, strict=False):
        pooled.setdefault(label, []).append(answer)
    for label in YESNO_LABELS:
        pooled.setdefault(label, [EMPTY])
    first: dict[str, str] = {}
    if pred is not None:
        for label, answer in zip(_labels(pred, side="predicted"), pred.answers, strict=False):
            first.setdefault(label, answer)
    prefix = f"{question.qid}_"
    entries = [
        _Entry(prefix + label, question, label, first.get(label, EMPTY), refs, pred is None)
        for label, refs in pooled.items()
    ]
    extra = [prefix + label for label in first if label not in pooled]
    return entries, extra


def _entries(task: str, preds: Mapping[Any, DuReaderQuestion],
             refs: Mapping[Any, DuReaderQuestion]) -> tuple[list[_Entry], dict[int, list[str]]]:
    entries: list[_Entry] = []
    extras: dict[int, list[str]] = {}  # index of the reference question -> prediction-only keys
    for index, question in enumerate(refs.values()):
        qtype = question.question_type
        pred = preds.get(question.qid)
        if task in ("yesno", "all") and qtype == "YES_NO":
            yesno, extra = _yesno_entries(question, pred)
            entries.extend(yesno)
            if extra:
                extras[index] = extra
        elif task in ("main", "all") or (task == "entity" and qtype == "ENTITY") \
                or (task == "description" and qtype == "DESCRIPTION"):
            entries.append(_main_entry(question, pred))
    return entries, extras


def _select(entries: Sequence[_Entry], extras: Mapping[int, list[str]], refs: Mapping[Any, DuReaderQuestion],
            source: str) -> list[_Entry]:
    """The scored keys of one source, with ``dict(list)`` semantics (a repeated key keeps its last entry)."""
    chosen: dict[Any, _Entry] = {}
    for entry in entries:
        if source == "both" or entry.question.source == source:
            chosen[entry.key] = entry
    if extras:
        questions = list(refs.values())
        for index, keys in extras.items():
            question = questions[index]
            if source != "both" and question.source != source:
                continue
            for key in keys:
                if key not in chosen:
                    label = key[len(f"{question.qid}_"):]
                    # compute_bleu_rouge asserts that both sides have the same keys.
                    raise OfficialInBandError(
                        f"the prediction has yes/no label {label!r}, which the reference does not use and "
                        "is not Yes, No or Depends (the official script stops: 'missing keys: set()')",
                        official="missing keys: set()", path=question.where, line=question.line,
                        qid=str(question.qid))
    return [entry for entry in chosen.values() if entry.kept]


def _score(entries: Iterable[_Entry]) -> None:
    """Per-entry BLEU statistics and ROUGE-L, on the normalised texts (spec 4.2), in one batch."""
    todo = [entry for entry in entries if entry.kept and entry.bleu is None]
    pairs = [(strip_whitespace(e.cand), [strip_whitespace(r) for r in e.refs]) for e in todo]
    for entry, (cand, refs), stats in zip(todo, pairs, char_bleu_stats_batch(pairs), strict=True):
        entry.bleu = stats
        entry.rouge = coco_rouge_l(cand, refs)


def _bleu_rouge(entries: Sequence[_Entry]) -> dict[str, float]:
    totals = sum_bleu_stats(entry.bleu for entry in entries if entry.bleu is not None)
    return {"Bleu-4": coco_bleu(totals), "Rouge-L": mean_or_nan([entry.rouge for entry in entries])}


# --------------------------------------------------------------------------- entity P/R/F1


@dataclass(frozen=True, slots=True)
class EntityCounts:
    correct: int
    predicted: int
    gold: int


def _entity_list(value: Any, what: str, q: DuReaderQuestion) -> list[str]:
    if not is_string_list(value):
        raise InputFormatError(f"{what} should be a list of strings", path=q.where, line=q.line, qid=str(q.qid))
    return value


def entity_counts(question: DuReaderQuestion, pred: DuReaderQuestion | None) -> EntityCounts:
    """compute_prf for one reference question (spec 4.6): the best reference list, then set overlaps."""
    if pred is None:
        pred_list: list[str] = []
    else:
        if len(pred.entity_answers) != 1:
            raise OfficialInBandError(
                f"the prediction should have exactly one entity list in 'entity_answers', "
                f"found {len(pred.entity_answers)}",
                official=f"the number of entity list for question_id {question.qid} is not 1.",
                path=pred.where, line=pred.line, qid=str(question.qid))
        pred_list = _entity_list(pred.entity_answers[0], "the predicted entity list", pred)
    ref_lists = [_entity_list(v, "every reference entity list", question) for v in question.entity_answers]
    best_f1 = 0.0
    best: list[str] | None = None
    pred_counts = Counter(pred_list)
    for ref_list in ref_lists:
        # local_prf (spec 4.6): multiset overlap.
        f1 = overlap_f1(pred_counts, len(pred_list), Counter(ref_list), len(ref_list))
        if f1 > best_f1:
            best, best_f1 = ref_list, f1
    if best is None:
        best = sorted(ref_lists, key=len)[0] if ref_lists else []
    gold = set(best)
    predicted = set(pred_list)
    return EntityCounts(len(gold & predicted), len(predicted), len(gold))


def entity_prf(counts: Iterable[EntityCounts]) -> dict[str, float]:
    """Micro precision/recall/F1; the official integer 0 for all three when nothing is correct."""
    correct = predicted = gold = 0
    for c in counts:
        correct += c.correct
        predicted += c.predicted
        gold += c.gold
    if correct == 0:
        return {"Precision": 0, "Recall": 0, "F1": 0}
    p = float(correct) / predicted
    r = float(correct) / gold
    return {"Precision": p, "Recall": r, "F1": 2 * p * r / (p + r)}


# --------------------------------------------------------------------------- evaluation


def normalize_task(task: str) -> str:
    """The official ``args.task.lower().replace('_', '')``, checked."""
    name = task.lower().replace("_", "")
    if name not in TASKS:
        raise OfficialInBandError(f"unknown task {task!r}: expected one of {', '.join(TASKS)} "
                                  "(case and '_' are ignored)", official=f"Illegal task name: {name}")
    return name


def evaluate_dureader(
    predictions: Mapping[Any, DuReaderQuestion],
    references: Mapping[Any, DuReaderQuestion],
    task: str = "main",
    *,
    strict: bool = False,
    pred_path: str = "predictions",
    ref_path: str = "references",
) -> EvalResult:
    """Score loaded files (see :func:`load_dureader`) as ``dureader_eval.py TASK`` does.

    ``metrics`` is the official JSON, values x100 and unrounded.  Per-example
    records (one per scored key of the ``both`` source) carry ``id``, the
    ``question_id`` and ``yesno_label`` of yes/no pseudo-questions,
    ``question_type``, ``source``, ``missing``, ``rouge_l`` and the BLEU
    statistics of :meth:`BleuStats.as_record`; for ``entity`` every reference
    question has a record with ``entity_correct/predicted/gold`` counts, and
    BLEU/ROUGE fields set to None when it is not an ENTITY question.
    """
    task = normalize_task(task)
    if not references:
        raise InputFormatError("the reference file has no question", path=ref_path)
    warnings = prediction_coverage(predictions, references, strict=strict, pred_path=pred_path, ref_path=ref_path)
    entries, extras = _entries(task, predictions, references)
    _score(entries)  # once: every source below sums these
    sources = SOURCES if task in ("main", "all") else SOURCES[:1]
    metrics: dict[str, dict[str, Any]] = {}
    both: list[_Entry] = []
    for source in sources:
        selected = _select(entries, extras, references, source)
        if source == "both":
            both = selected
        if task == "yesno":
            metrics[source] = _bleu_rouge(selected)
            for label in YESNO_LABELS:
                part = _bleu_rouge([e for e in selected if str(e.key).endswith(label)])
                metrics[source].update({f"{label}|{name}": value for name, value in part.items()})
        else:
            metrics[source] = _bleu_rouge(selected)
    per_example: list[dict[str, Any]]
    if task == "entity":
        counts = {q.qid: entity_counts(q, predictions.get(q.qid)) for q in references.values()}
        metrics["both"].update(entity_prf(counts.values()))
        per_example = _entity_records(references, predictions, both, counts)
    else:
        per_example = [_record(entry) for entry in both]
    return EvalResult(format_metrics(metrics, task), per_example, warnings)


def _record(entry: _Entry) -> dict[str, Any]:
    q = entry.question
    record: dict[str, Any] = {"id": entry.key}
    if entry.label is not None:
        record["question_id"] = q.qid
        record["yesno_label"] = entry.label
    record.update(question_type=q.question_type, source=q.source, missing=entry.missing, rouge_l=entry.rouge)
    assert entry.bleu is not None  # _bleu_rouge scored every selected entry
    record.update(entry.bleu.as_record())
    return record


def _entity_records(references: Mapping[Any, DuReaderQuestion], predictions: Mapping[Any, DuReaderQuestion],
                    scored: Sequence[_Entry], counts: Mapping[Any, EntityCounts]) -> list[dict[str, Any]]:
    by_qid = {entry.key: entry for entry in scored}
    out = []
    for q in references.values():
        c = counts[q.qid]
        entry = by_qid.get(q.qid)
        record: dict[str, Any] = {
            "id": q.qid, "question_type": q.question_type, "source": q.source,
            "missing": q.qid not in predictions,
            "entity_correct": c.correct, "entity_predicted": c.predicted, "entity_gold": c.gold,
        }
        if entry is not None:
            record["rouge_l"] = entry.rouge
            assert entry.bleu is not None
            record.update(entry.bleu.as_record())
        else:
            record.update(rouge_l=None, bleu_correct=None, bleu_guess=None, test_len=None, ref_len=None)
        out.append(record)
    return out


class LocatedQuestion(Protocol):
    """A question read from a file: its id and where it was read (file, line)."""

    qid: Any
    where: str
    line: int | None


def prediction_coverage(preds: Mapping[Any, LocatedQuestion], refs: Mapping[Any, LocatedQuestion], *,
                        strict: bool, pred_path: str, ref_path: str) -> list[str]:
    """Missing and unknown prediction ids: errors with ``strict``, else warnings (DuReader and MRC2018 alike)."""
    missing = [qid for qid in refs if qid not in preds]
    unknown = [qid for qid in preds if qid not in refs]
    if strict and missing:
        q = refs[missing[0]]
        raise InputFormatError(f"no prediction for this reference question ({len(missing)} missing in all)",
                               path=pred_path, qid=str(q.qid))
    if strict and unknown:
        p = preds[unknown[0]]
        raise InputFormatError(f"this question_id is not in the reference file {ref_path} "
                               f"({len(unknown)} unknown in all)", path=p.where, line=p.line, qid=str(p.qid))
    warnings = []
    if missing:
        warnings.append(f"{pred_path}: {len(missing)} of {len(refs)} reference questions have no prediction "
                        f"and are scored as empty answers: {_ids(missing)}")
    if unknown:
        warnings.append(f"{pred_path}: {len(unknown)} predictions are for questions not in {ref_path} "
                        f"and are ignored: {_ids(unknown)}")
    return warnings


def _ids(qids: Sequence[Any]) -> str:
    listed = ", ".join(repr(q) for q in qids[:MAX_LISTED_IDS])
    return listed + (f" and {len(qids) - MAX_LISTED_IDS} more" if len(qids) > MAX_LISTED_IDS else "")


# --------------------------------------------------------------------------- output


def format_metrics(metrics: Mapping[str, Mapping[str, Any]], task: str) -> dict[str, Any]:
    """``format_metrics`` (spec 4.7) without the rounding: values x100, same entries, same order."""
    data: list[dict[str, Any]] = []

    def add(name: str, value: Any, kind: str) -> None:
        data.append({"name": name, "value": value * 100, "type": kind})

    if task == "entity":
        for name in ("Bleu-4", "Rouge-L", "F1", "Precision", "Recall"):
            add(name, metrics["both"].get(name, 0), "both")
    elif task == "yesno":
        both = metrics["both"]
        for name in ("Bleu-4", "Rouge-L"):
            add(name, both.get(name, 0), "All")
            for label in YESNO_LABELS:
                add(name, both.get(f"{label}|{name}", 0), label)
    else:
        sources = SOURCES if task in ("main", "all") else SOURCES[:1]
        for name in ("Bleu-4", "Rouge-L"):
            for source in sources:
                add(name, metrics[source].get(name, 0), source)
    return {"data": data, "errorCode": 0, "errorMsg": "success"}


def official_rounding(result: Mapping[str, Any]) -> dict[str, Any]:
    """``round(100 * x, 2)`` on every value, as the official prints them (Python 3 ``round``)."""
    out = dict(result)
    out["data"] = [{**item, "value": round(item["value"], 2)} for item in result["data"]]
    return out


def in_band_error_json(message: str) -> dict[str, Any]:
    """The official in-band error object (``format_metrics`` with an error)."""
    return {"errorMsg": message, "errorCode": 1, "data": []}


# --------------------------------------------------------------------------- per-example helpers


def aggregate_records(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """BLEU-4 and ROUGE-L (x100) of any subset of per-example records, without re-scoring.

    Records whose ``rouge_l`` is None (entity task, non-ENTITY questions) are
    skipped; when records carry entity counts, Precision/Recall/F1 are added.
    """
    records = list(records)
    scored = [r for r in records if r.get("rouge_l") is not None]
    totals = sum_bleu_stats(BleuStats.from_record(r) for r in scored)
    out: dict[str, float] = {
        "Bleu-4": coco_bleu(totals) * 100,
        "Rouge-L": mean_or_nan([r["rouge_l"] for r in scored]) * 100,
    }
    if records and all("entity_correct" in r for r in records):
        prf = entity_prf(EntityCounts(r["entity_correct"], r["entity_predicted"], r["entity_gold"])
                         for r in records)
        out.update({name: value * 100 for name, value in prf.items()})
    return out


def breakdown_by_question_type(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """``{question_type: {"Bleu-4": .., "Rouge-L": ..}}`` (x100) from per-example records, in first-seen order."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        if record.get("rouge_l") is not None:
            groups.setdefault(str(record.get("question_type")), []).append(record)
    return {qtype: {k: v for k, v in aggregate_records(group).items() if k in ("Bleu-4", "Rouge-L")}
            for qtype, group in groups.items()}


# --------------------------------------------------------------------------- command line


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "dureader",
        help="DuReader 2.0 / MRC2018 baseline evaluation (dureader_eval.py)",
        description="Character-level BLEU-4 and ROUGE-L (and entity P/R/F1) exactly as DuReader's "
                    "utils/dureader_eval.py; values x100 at full precision unless --official-rounding.",
    )
    parser.add_argument("pred_file", help="predictions: JSON lines (or a .zip of such files)")
    parser.add_argument("ref_file", help="references: JSON lines with 'source' (or a .zip)")
    parser.add_argument("task", help="Main|Yes_No|All|Entity|Description (case and '_' are ignored)")
    parser.add_argument(
        "--in-band-errors",
        action="store_true",
        help="where the official script reports an error in band, print its error JSON on stdout and "
             "exit 0 as it does (the explanation still goes to stderr)",
    )
    add_common_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> EvalResult:
    try:
        task = normalize_task(args.task)
        preds = load_dureader(args.pred_file, reference=False)
        refs = load_dureader(args.ref_file, reference=True)
        result = evaluate_dureader(preds, refs, task, strict=args.strict,
                                   pred_path=args.pred_file, ref_path=args.ref_file)
    except OfficialInBandError as exc:
        if not args.in_band_errors:
            raise
        return EvalResult(in_band_error_json(exc.official), [], [f"error: {exc}"])
    if args.official_rounding:
        result.metrics = official_rounding(result.metrics)
    return result


__all__ = [
    "DuReaderQuestion", "EntityCounts", "OfficialInBandError", "aggregate_records",
    "breakdown_by_question_type", "entity_counts", "entity_prf", "evaluate_dureader", "format_metrics",
    "gc_paused", "in_band_error_json", "iter_json_lines_official", "load_dureader", "load_raw_dureader",
    "normalize_task", "official_rounding", "question_from_line", "questions_from_lines",
    "raw_to_prediction", "raw_to_reference", "source_from_file_name",
]
