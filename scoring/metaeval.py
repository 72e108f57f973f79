"""Meta-evaluation of answer metrics against human judgments (Yang et al. 2018, section 4).

``python -m scoring metaeval JUDGMENTS REF.jsonl`` scores every judged
candidate answer with each metric and reports the **question-level Pearson
correlation** (PCC) of each metric with the human scores, per question type
and overall, as Yang et al.'s Table 2: "each candidate answer is taken as a
sample to be scored by the two metrics and score pairs are collected across
all the samples to compute PCC".

Metrics (:data:`METRICS`), each scored on one candidate against its question's
references:

* ``ROUGE-L`` and ``BLEU-4``: the MRC2018 arithmetic (:mod:`scoring.mrc2018`,
  gamma 1.2) without bonus;
* ``ROUGE-L-adapted`` and ``BLEU-4-adapted``: the same with the yes/no bonus
  (weight ``alpha``; YES_NO references, when the candidate states an opinion
  label) and the entity bonus (weight ``beta``; ENTITY references with gold
  entities), exactly as ``mrc_eval.py`` applies them.  Defaults are the
  paper's alpha 2.0, beta 1.0;
* ``EM`` and ``F1``: at character level CMRC 2018's (Chinese characters are
  tokens, :mod:`scoring.cmrc2018`), at word level SQuAD v1.1's;
* ``DeepRead-P`` and ``DeepRead-R``: Deep Read's precision and recall on
  stemmed content words (Hirschman et al. 1999, :mod:`scoring.deepread`)
  against the best reference (highest recall, then precision).  At character
  level every Chinese character counts as a word (the paper's stop list and
  stemmer are English; Latin words keep them).

Levels.  ``char`` (default) compares strings with white space removed, as the
MRC2018 and DuReader scripts do for Chinese.  ``word`` is for English answers:
lower-cased tokens, a token being a run of word characters or one punctuation
mark (so the period counts, as in the paper's examples: "include period symbol
and omit lemmatization").  Word mode maps each distinct token of a question to
one private-use character and runs the very same character code, so an
n-gram is n words, LCS counts words, and an entity "occurs" in a candidate
when its tokens occur there contiguously (its length is its word count).

Choices the paper leaves open:

* BLEU-4 of one candidate is the MRC2018 BLEU-4 of a one-question corpus,
  unsmoothed, so it is 0 when no 4-gram matches; a candidate shorter than four
  units gets 0 (the LIC2019 guard) instead of a division by zero.
* A correlation is undefined (``null``) when the metric or the human score is
  constant over the group, or the group has fewer than 2 candidates.  A
  candidate where a metric is undefined (Deep Read with no content word in any
  reference) is left out of that metric's correlations, with a warning.
* The **paired bootstrap** of two metrics' correlations (Koehn 2004, as Yang
  et al. use it with 100 resamples): each resample draws the group's
  candidates with replacement, recomputes both PCCs on the same draw and
  compares them.  We report the observed difference, the percentile interval
  of the resampled differences, ``wins`` (resamples where the first metric's
  PCC is higher; one where either is undefined is not a win) and the
  one-sided ``p_value = (1 + samples - wins) / (1 + samples)``, the +1
  counting the observed sample as in :mod:`scoring.significance`, so 100
  resamples give at best p = 1/101.  Seeded: same seed, same numbers.
* **Sweeps** recompute the adapted metrics' correlations for each value of
  alpha (beta fixed) or beta (alpha fixed), as the paper's Figures 1 and 2.

* **Agreement between annotators** (the paper's Table 1): where candidates
  carry each annotator's score (``scores``), the PCC between the first and the
  second annotator's scores over those candidates, per group.  With judges
  assigned per item (a platform's round), "first" and "second" are the
  item's first and second judgment, the usual reading for more than two
  people.  Beside it Krippendorff's alpha (ordinal, every annotator's score)
  and, where every candidate has exactly two scores, Cohen's unweighted kappa
  (:func:`scoring.agreement.agreement_table`).
* **Systems** (``systems``, where candidates name their ``system``): each
  system's mean human score with a percentile bootstrap interval over its
  questions (:func:`scoring.agreement.mean_interval`), its rank, each metric's
  overall score on all its questions, and Kendall's tau-b between the human
  and each metric's scores of the systems.
* **Tables**: ``--format markdown|csv|latex`` prints the results as tables
  (:func:`metaeval_tables`, written by :mod:`scoring.tables`).
* **Overall score level** (the paper's Table 3): where candidates name their
  ``system``, each of ``overall_samples`` rounds (default 100) draws
  ``overall_questions`` questions (default 30) without replacement among the
  group's questions that every system answered, the same questions for every
  system; each system's overall metric score on them and its overall human
  score (the mean of its candidates' human scores, as the paper defines it)
  make one pair, so 100 rounds of 5 systems give 500 pairs.  An overall
  score is what the metric's official script reports for a set of questions:
  the mean of the per-question scores, except BLEU-4, which is the corpus
  BLEU of the sample's summed n-gram statistics (the "decomposability" the
  paper names as the reason BLEU behaves differently here).  Deep Read's mean
  leaves out questions where it is undefined.  A group with fewer common
  questions than a sample needs gets no correlation, with a warning.  Seeded
  (each group from the same seed): same seed, same numbers.

Input.  Judgments: JSON lines, or CSV with a header row (by the ``.csv``
suffix), one candidate per line, fields ``question_id``, ``answer``,
``score`` (a number in [1, 5]; a mean of annotators is fine) or ``scores``
(each annotator's, in [1, 5]: a JSON list, or in CSV numbers separated by
``;``; ``score`` is then their mean unless given), optionally ``system`` (who
gave the answer: every candidate names one, or none does; a system answers a
question once), ``question_type`` (must agree with the reference's) and
``yesno_answer`` (the candidate's opinion: ``Yes``, ``No`` or ``Depends``).
Other fields are ignored.  References: an MRC2018 reference file, or a
released DuReader file (``search.dev.json``: its ``source`` is then
``search``).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from scoring.agreement import agreement_table, kendall_tau_b, mean_interval, pearson, row_pearson
from scoring.charmetrics import BleuStats, mrc_bleu, strip_whitespace, sum_bleu_stats
from scoring.cmrc2018 import Cmrc2018Scorer
from scoring.deepread import content_words, precision_recall
from scoring.dureader import iter_json_lines_official, raw_to_reference
from scoring.errors import InputFormatError, ScoringError
from scoring.io import decode_text, json_type, parse_json, read_bytes, require
from scoring.mrc2018 import bleu_stats_with_bonus, question_from_line, rouge_l_with_bonus
from scoring.result import EvalResult
from scoring.tables import Column, Table, tables_csv, tables_latex, tables_markdown
from scoring.text import max_em_f1_v1

FloatArray = npt.NDArray[np.float64]
Level = Literal["char", "word"]

LEVELS: tuple[Level, ...] = ("char", "word")
METRICS: tuple[str, ...] = (
    "ROUGE-L", "ROUGE-L-adapted", "BLEU-4", "BLEU-4-adapted", "EM", "F1", "DeepRead-P", "DeepRead-R",
)
ADAPTED: tuple[str, ...] = ("ROUGE-L-adapted", "BLEU-4-adapted")
# Yang et al. section 4.2: alpha 2.0, beta 1.0, 100 bootstrap resamples; gamma 1.2 as mrc_eval.py.
PAPER_ALPHA = 2.0
PAPER_BETA = 1.0
PAPER_SAMPLES = 100
# Section 4.2, overall score level: 30 questions per sample, sampled 100 times.
PAPER_OVERALL_QUESTIONS = 30
PAPER_OVERALL_SAMPLES = 100
# The bootstrap of each system's mean human score (resamples of its questions).
INTERVAL_SAMPLES = 1000
GAMMA = 1.2
# The paper's paired tests: each adapted metric against its original.
DEFAULT_COMPARE: tuple[tuple[str, str], ...] = (("ROUGE-L-adapted", "ROUGE-L"), ("BLEU-4-adapted", "BLEU-4"))
OVERALL = "overall"
YESNO_LABELS = frozenset({"Yes", "No", "Depends"})

# Resamples are drawn in chunks of at most this many candidate draws (bounded memory).
_CHUNK_ELEMENTS = 1 << 20


# --------------------------------------------------------------------------- word level

_WORD_TOKEN = re.compile(r"\w+|[^\w\s]")
# Supplementary Private Use Area-A: never white space, never in real text, one code point each.
_FIRST_CODE_POINT = 0xF0000
_MAX_WORDS = 0xFFFE


def word_tokens(text: str) -> list[str]:
    """Lower-cased runs of word characters, and each punctuation mark alone ("years." -> years, .)."""
    return _WORD_TOKEN.findall(text.lower())


def to_units(texts: Sequence[str], level: Level) -> list[str]:
    """The strings the MRC2018 functions compare: stripped characters, or one character per word.

    At word level the texts share one vocabulary (a question's candidate, references and
    entities must be encoded together), so equal words are equal characters.
    """
    if level == "char":
        return [strip_whitespace(text) for text in texts]
    vocabulary: dict[str, str] = {}
    out: list[str] = []
    for text in texts:
        chars: list[str] = []
        for token in word_tokens(text):
            char = vocabulary.get(token)
            if char is None:
                if len(vocabulary) >= _MAX_WORDS:
                    raise ScoringError(f"more than {_MAX_WORDS} distinct words in one question's texts")
                char = vocabulary[token] = chr(_FIRST_CODE_POINT + len(vocabulary))
            chars.append(char)
        out.append("".join(chars))
    return out


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True, slots=True)
class Judgment:
    """One judged candidate; ``qid`` is the question id as a string (JSON ids may be numbers)."""

    qid: str
    answer: str
    score: float
    question_type: str | None = None
    yesno: str | None = None
    line: int = 0
    system: str | None = None
    annotator_scores: tuple[float, ...] = ()  # each annotator's, when the file gives them


@dataclass(frozen=True, slots=True)
class Reference:
    """A question's references with white space kept (word level needs it)."""

    qid: str
    question_type: str
    answers: tuple[str, ...]
    yesno_answers: tuple[Any, ...]
    entities: tuple[str, ...]  # every gold entity of an ENTITY question, in file order; () otherwise


def _optional_text(obj: Mapping[str, Any], key: str, *, path: str, line: int, qid: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise InputFormatError(f"field {key!r} should be a string, found {json_type(value)}", path=path, line=line,
                               qid=qid)
    return value


def _judgment(obj: Mapping[str, Any], *, path: str, line: int) -> Judgment:
    raw_qid = require(obj, "question_id", (str, int), path=path, line=line)
    # DuReader's ids are JSON numbers; CSV cells are strings: both sides are matched as strings.
    qid = str(raw_qid)
    if isinstance(raw_qid, bool):
        raise InputFormatError("field 'question_id' should be a string or an integer, found a boolean",
                               path=path, line=line)
    answer = require(obj, "answer", str, path=path, line=line, qid=qid)
    annotator_scores = _annotator_scores(obj, path=path, line=line, qid=qid)
    if "score" in obj or not annotator_scores:
        score = _on_scale(require(obj, "score", (int, float), path=path, line=line, qid=qid), "score",
                          path=path, line=line, qid=qid)
    else:
        score = sum(annotator_scores) / len(annotator_scores)
    system = obj.get("system")
    if system is not None and (isinstance(system, bool) or not isinstance(system, (str, int)) or system == ""):
        raise InputFormatError(f"field 'system' should be a non-empty string, found {json_type(system)}", path=path,
                               line=line, qid=qid)
    yesno = _optional_text(obj, "yesno_answer", path=path, line=line, qid=qid)
    if yesno is not None and yesno not in YESNO_LABELS:
        raise InputFormatError(f"yesno_answer {yesno!r} should be one of Yes, No, Depends", path=path, line=line,
                               qid=qid)
    qtype = _optional_text(obj, "question_type", path=path, line=line, qid=qid)
    return Judgment(qid, answer, float(score), qtype, yesno, line, None if system is None else str(system),
                    annotator_scores)


def _on_scale(value: Any, name: str, *, path: str, line: int, qid: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1.0 <= value <= 5.0:
        # The comparison also refuses NaN.
        raise InputFormatError(f"{name} {value!r} is outside the 1-5 scale", path=path, line=line, qid=qid)
    return float(value)


def _annotator_scores(obj: Mapping[str, Any], *, path: str, line: int, qid: str) -> tuple[float, ...]:
    raw = obj.get("scores")
    if raw is None:
        return ()
    if isinstance(raw, str):  # a CSV cell: "4;5"
        try:
            raw = [float(v) for v in raw.split(";") if v.strip()]
        except ValueError:
            raise InputFormatError(f"scores {raw!r} should be numbers separated by ';'", path=path, line=line,
                                   qid=qid) from None
    if not isinstance(raw, list) or not raw:
        raise InputFormatError(f"field 'scores' should be a non-empty list of numbers, found {json_type(raw)}",
                               path=path, line=line, qid=qid)
    return tuple(_on_scale(v, "an annotator's score", path=path, line=line, qid=qid) for v in raw)


def _csv_object(row: Mapping[str | None, Any]) -> dict[str, Any]:
    """A CSV row as the JSON object it stands for: blank cells are absent, a score that parses is a number."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key is None or value is None:
            continue
        if key != "answer":  # an answer's spaces are its own; elsewhere they are spreadsheet noise
            value = value.strip()
            if not value:
                continue
        out[key] = value
    try:
        out["score"] = float(out["score"])
    except (KeyError, ValueError):
        pass  # reported by _judgment, with the line
    return out


def _judgment_rows(name: str, text: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if name.lower().endswith((".csv", ".csv.gz")):
        reader = csv.DictReader(io.StringIO(text, newline=""))
        for row in reader:
            if None in row:  # more cells than header columns
                raise InputFormatError("more cells than the header has columns", path=name, line=reader.line_num)
            yield reader.line_num, _csv_object(row)
        return
    for number, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        obj = parse_json(line.rstrip("\r\n"), name, line_offset=number - 1)
        if not isinstance(obj, dict):
            raise InputFormatError(f"expected a JSON object, found {json_type(obj)}", path=name, line=number)
        yield number, obj


def load_judgments(path: str | os.PathLike[str]) -> list[Judgment]:
    """Read a judgment file: JSON lines, or CSV with a header when the name ends in ``.csv``."""
    name = os.fspath(path)
    return parse_judgments(decode_text(read_bytes(name), name), name=name)


def parse_judgments(text: str, *, name: str = "judgments.jsonl") -> list[Judgment]:
    """A judgment file's text, read as :func:`load_judgments` reads the file called ``name`` (so a
    platform can analyse its export without writing it to disk first)."""
    judgments = [_judgment(obj, path=name, line=line) for line, obj in _judgment_rows(name, text)]
    if not judgments:
        raise InputFormatError("no judgment in the file", path=name)
    return judgments


def load_references(path: str | os.PathLike[str]) -> dict[str, Reference]:
    """Read an MRC2018 reference file or a released DuReader file, validated as ``mrc_eval.py`` reads it."""

    name = os.fspath(path)
    return parse_references(iter_json_lines_official(name, in_band=False), name=name)


def parse_references(rows: Iterable[tuple[str, int, Any]], *, name: str = "references") -> dict[str, Reference]:
    """References from ``(where, line, object)`` rows, each object a line of an MRC2018 reference
    file (or a released DuReader record), checked as :func:`load_references` checks the file's."""
    out: dict[str, Reference] = {}
    for where, line, obj in rows:
        if isinstance(obj, dict) and "source" not in obj and "question_id" in obj and "question_type" in obj:
            # A released file (search.dev.json...): its records have no source, which is not used here.
            obj = raw_to_reference(obj, source="search")
        question = question_from_line(obj, where=where, line=line, reference=True)
        qid = str(question.qid)
        if qid in out:
            raise InputFormatError("question_id appears more than once", path=where, line=line, qid=qid)
        entities: tuple[str, ...] = ()
        if question.question_type == "ENTITY":
            entities = tuple(dict.fromkeys(e for group in obj.get("entity_answers", []) for e in group))
        out[qid] = Reference(qid, str(question.question_type), tuple(obj["answers"] or ()),
                             tuple(question.yesno_answers), entities)
    if not out:
        raise InputFormatError("the reference file has no question", path=name)
    return out


# --------------------------------------------------------------------------- scoring one candidate


@dataclass(frozen=True, slots=True)
class Candidate:
    """A judgment with its question's references, in units (see :func:`to_units`), ready to score."""

    judgment: Judgment
    level: Level
    question_type: str
    cand: str
    refs: tuple[str, ...]
    entities: tuple[str, ...] | None  # the entity bonus applies (ENTITY with gold entities)
    yn_label: str | None  # the yes/no bonus applies (YES_NO and the candidate states an opinion)
    yn_refs: tuple[Any, ...]
    fixed: Mapping[str, float]  # every metric that does not depend on alpha and beta
    bleu: BleuStats  # plain BLEU-4's statistics, summed with others' for an overall (corpus) score


def sentence_bleu4(stats: BleuStats) -> float:
    """MRC2018 BLEU-4 of one candidate (a one-question corpus), 0 where the official would divide by zero."""
    return mrc_bleu(sum_bleu_stats([stats]), lic2019_guards=True)


def adapted_scores(candidate: Candidate, *, alpha: float, beta: float, gamma: float = GAMMA) -> dict[str, float]:
    """``ROUGE-L-adapted`` and ``BLEU-4-adapted`` of a candidate at these bonus weights."""

    c = candidate
    return {
        "ROUGE-L-adapted": rouge_l_with_bonus(c.cand, c.refs, gamma=gamma, **_bonus(c, alpha=alpha, beta=beta)),
        "BLEU-4-adapted": sentence_bleu4(adapted_bleu_stats(c, alpha=alpha, beta=beta)),
    }


def _bonus(c: Candidate, *, alpha: float, beta: float) -> dict[str, Any]:
    return {"yn_label": c.yn_label, "yn_refs": c.yn_refs, "entities": c.entities, "alpha": alpha, "beta": beta}


def adapted_bleu_stats(candidate: Candidate, *, alpha: float, beta: float) -> BleuStats:
    """The BLEU statistics of ``BLEU-4-adapted`` (bonuses weighted in), to sum over questions."""
    return bleu_stats_with_bonus(candidate.cand, candidate.refs, **_bonus(candidate, alpha=alpha, beta=beta))


_HAN = re.compile("([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")


def deepread_precision_recall(answer: str, references: Sequence[str], *, level: Level) -> tuple[float, float] | None:
    """Deep Read P and R against the reference with the best recall (then precision); None if none has a content word."""

    def words(text: str) -> frozenset[str]:
        # Chinese has no spaces: each character is a word (otherwise a whole clause would be one token).
        return content_words(_HAN.sub(r" \1 ", text) if level == "char" else text)

    response = words(answer)
    best: tuple[float, float] | None = None
    for reference in references:
        key = words(reference)
        if key:
            precision, recall = precision_recall(response, key)
            if best is None or (recall, precision) > best:
                best = (recall, precision)
    return None if best is None else (best[1], best[0])


def prepare(judgment: Judgment, reference: Reference, *, level: Level, gamma: float = GAMMA,
            path: str = "judgments") -> Candidate:
    """Check a judgment against its reference and score everything that does not depend on alpha and beta."""

    qtype = reference.question_type
    if judgment.question_type is not None and judgment.question_type != qtype:
        raise InputFormatError(f"question_type {judgment.question_type!r} differs from the reference's {qtype!r}",
                               path=path, line=judgment.line, qid=judgment.qid)
    if not reference.answers:
        raise InputFormatError("the reference has no answer, so no metric is defined for this candidate",
                               path=path, line=judgment.line, qid=judgment.qid)
    entity_texts = reference.entities if qtype == "ENTITY" else ()
    units = to_units([judgment.answer, *reference.answers, *entity_texts], level)
    cand, refs = units[0], tuple(units[1:1 + len(reference.answers)])
    # As a set, like mrc_eval.py: an entity listed twice (or twice once white space is gone) counts once.
    entities = tuple(dict.fromkeys(units[1 + len(reference.answers):])) or None
    yn_label = judgment.yesno if qtype == "YES_NO" else None
    if yn_label is not None and len(reference.yesno_answers) != len(reference.answers):
        raise InputFormatError(
            f"the reference has {len(reference.answers)} answers but {len(reference.yesno_answers)} yes/no labels; "
            "the yes/no bonus needs one label per answer", path=path, line=judgment.line, qid=judgment.qid)
    bleu = bleu_stats_with_bonus(cand, refs)
    fixed: dict[str, float] = {
        "ROUGE-L": rouge_l_with_bonus(cand, refs, gamma=gamma),
        "BLEU-4": sentence_bleu4(bleu),
    }
    if level == "char":

        em, f1 = Cmrc2018Scorer().best_v1(judgment.answer, reference.answers)
    else:

        em, f1 = max_em_f1_v1(judgment.answer, reference.answers)
    fixed["EM"], fixed["F1"] = float(em), f1
    pr = deepread_precision_recall(judgment.answer, reference.answers, level=level)
    fixed["DeepRead-P"], fixed["DeepRead-R"] = pr if pr is not None else (math.nan, math.nan)
    return Candidate(judgment, level, qtype, cand, refs, entities, yn_label, tuple(reference.yesno_answers), fixed,
                     bleu)


# --------------------------------------------------------------------------- correlation


# Pearson lives in scoring.agreement (one definition for metaeval and the judging rounds).


@dataclass(frozen=True)
class CorrelationDifference:
    """The paired bootstrap of ``r(a, human) - r(b, human)`` on one group of candidates."""

    metric_a: str
    metric_b: str
    group: str
    candidates: int
    r_a: float | None
    r_b: float | None
    samples: int
    seed: int | None
    level: float
    wins: int
    undefined: int
    ci_low: float | None
    ci_high: float | None

    @property
    def difference(self) -> float | None:
        return None if self.r_a is None or self.r_b is None else self.r_a - self.r_b

    @property
    def p_value(self) -> float:
        """One-sided: how plausible "a correlates no better than b" is; ``(1 + samples - wins) / (1 + samples)``."""
        return (1 + self.samples - self.wins) / (1 + self.samples)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.metric_a, "b": self.metric_b, "group": self.group, "candidates": self.candidates,
            "r_a": self.r_a, "r_b": self.r_b, "difference": self.difference,
            "ci": [self.ci_low, self.ci_high], "level": self.level,
            "wins": self.wins, "undefined": self.undefined, "samples": self.samples, "seed": self.seed,
            "p_value": self.p_value,
        }


def bootstrap_correlation_difference(
    human: Sequence[float] | FloatArray,
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    *,
    names: tuple[str, str] = ("a", "b"),
    group: str = OVERALL,
    samples: int = PAPER_SAMPLES,
    seed: int | None = 0,
    level: float = 0.95,
) -> CorrelationDifference:
    """Koehn's paired bootstrap of two metrics' correlations with the same human scores (module notes).

    Candidates where either metric is not finite are left out first, so both
    correlations are always computed on the same draw.
    """
    h = np.asarray(human, dtype=np.float64)
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if not h.shape == x.shape == y.shape or h.ndim != 1:
        raise ValueError("human, a and b must be sequences of the same length")
    if samples < 1:
        raise ValueError("samples must be at least 1")
    if not 0.0 < level < 1.0:
        raise ValueError("level must be between 0 and 1")
    keep = np.isfinite(h) & np.isfinite(x) & np.isfinite(y)
    h, x, y = h[keep], x[keep], y[keep]
    n = len(h)
    r_a, r_b = pearson(h, x), pearson(h, y)
    if n < 2:
        return CorrelationDifference(names[0], names[1], group, n, r_a, r_b, samples, seed, level, 0, samples,
                                     None, None)
    rng = np.random.default_rng(seed)
    diffs = np.empty(samples, dtype=np.float64)
    rows = max(1, min(samples, _CHUNK_ELEMENTS // n))
    for start in range(0, samples, rows):
        idx = rng.integers(0, n, size=(min(rows, samples - start), n))
        hs = h[idx]
        diffs[start:start + len(idx)] = row_pearson(hs, x[idx]) - row_pearson(hs, y[idx])
    defined = diffs[np.isfinite(diffs)]
    wins = int((defined > 0).sum())
    low = high = None
    if len(defined):
        tail = (1.0 - level) / 2.0
        low, high = (float(v) for v in np.quantile(defined, [tail, 1.0 - tail]))
    return CorrelationDifference(names[0], names[1], group, n, r_a, r_b, samples, seed, level, wins,
                                 samples - len(defined), low, high)


# --------------------------------------------------------------------------- the whole analysis


def _groups(candidates: Sequence[Candidate]) -> dict[str, list[int]]:
    """Candidate indices per question type (first-seen order), then ``overall``."""
    out: dict[str, list[int]] = {}
    for i, c in enumerate(candidates):
        out.setdefault(c.question_type, []).append(i)
    out[OVERALL] = list(range(len(candidates)))
    return out


def _scores(candidates: Sequence[Candidate], *, alpha: float, beta: float, gamma: float) -> dict[str, FloatArray]:
    columns: dict[str, list[float]] = {m: [] for m in METRICS}
    for c in candidates:
        values = {**c.fixed, **adapted_scores(c, alpha=alpha, beta=beta, gamma=gamma)}
        for metric in METRICS:
            columns[metric].append(values[metric])
    return {m: np.asarray(v, dtype=np.float64) for m, v in columns.items()}


def correlation_table(human: FloatArray, scores: Mapping[str, FloatArray], groups: Mapping[str, Sequence[int]],
                      metrics: Iterable[str] = METRICS) -> dict[str, dict[str, float | None]]:
    """``{metric: {group: r}}`` with None where r is undefined."""
    return {m: {g: pearson(human[idx], scores[m][idx]) for g, idx in groups.items()} for m in metrics}


def sweep(candidates: Sequence[Candidate], *, parameter: Literal["alpha", "beta"], values: Sequence[float],
          alpha: float = PAPER_ALPHA, beta: float = PAPER_BETA, gamma: float = GAMMA) -> list[dict[str, Any]]:
    """One row per value of ``parameter`` (the other weight fixed): the adapted metrics' correlations by group."""
    human = np.asarray([c.judgment.score for c in candidates], dtype=np.float64)
    groups = _groups(candidates)
    rows: list[dict[str, Any]] = []
    for value in values:
        _check_weight(parameter, value)
        weights = {"alpha": alpha, "beta": beta, parameter: value}
        columns: dict[str, list[float]] = {m: [] for m in ADAPTED}
        for c in candidates:
            for metric, score in adapted_scores(c, gamma=gamma, **weights).items():
                columns[metric].append(score)
        scores = {m: np.asarray(v, dtype=np.float64) for m, v in columns.items()}
        rows.append({parameter: value, **correlation_table(human, scores, groups, ADAPTED)})
    return rows


def annotator_agreement(candidates: Sequence[Candidate]) -> dict[str, dict[str, Any]]:
    """Per group, the paper's Table 1 and more (:func:`scoring.agreement.agreement_table`):
    Pearson's r between the first and second annotator's scores, Krippendorff's alpha (ordinal,
    over every annotator's score) and Cohen's kappa (unweighted; where each candidate has
    exactly two scores), over the candidates that have two or more; ``{}`` when none has."""
    judged = [c for c in candidates if len(c.judgment.annotator_scores) >= 2]
    if not judged:
        return {}
    rows = agreement_table([(c.question_type, c.judgment.annotator_scores) for c in judged], level="ordinal")
    return {row.group: {"candidates": row.items, "pearson": row.pearson, "alpha": row.alpha, "kappa": row.kappa}
            for row in rows}


def _systems_by_question(candidates: Sequence[Candidate], path: str) -> dict[str, dict[str, Candidate]]:
    """``{system: {question id: candidate}}``; every candidate names a system, once per question."""
    out: dict[str, dict[str, Candidate]] = {}
    for c in candidates:
        j = c.judgment
        if j.system is None:
            raise InputFormatError("field 'system' is missing while other candidates name theirs; the overall "
                                   "score level needs every candidate's system", path=path, line=j.line, qid=j.qid)
        answers = out.setdefault(j.system, {})
        if j.qid in answers:
            raise InputFormatError(f"system {j.system!r} answers this question twice (first on line "
                                   f"{answers[j.qid].judgment.line})", path=path, line=j.line, qid=j.qid)
        answers[j.qid] = c
    return out


BLEU_METRICS = frozenset({"BLEU-4", "BLEU-4-adapted"})


def _overall_mean(values: Iterable[float]) -> float:
    """A mean-type metric's overall score (Deep Read's leaves out questions where it is undefined)."""
    defined = [v for v in values if not math.isnan(v)]
    return sum(defined) / len(defined) if defined else math.nan


def _overall_score(metric: str, per_question: Sequence[Mapping[str, float]],
                   bleu: Sequence[Mapping[str, BleuStats]]) -> float:
    """A metric's overall score on some questions: corpus BLEU of the summed statistics, else the mean."""
    if metric in BLEU_METRICS:
        return mrc_bleu(sum_bleu_stats(stats[metric] for stats in bleu), lic2019_guards=True)
    return _overall_mean(values[metric] for values in per_question)


def overall_level(candidates: Sequence[Candidate], *, alpha: float = PAPER_ALPHA, beta: float = PAPER_BETA,
                  gamma: float = GAMMA, questions: int = PAPER_OVERALL_QUESTIONS,
                  samples: int = PAPER_OVERALL_SAMPLES, seed: int | None = 0,
                  path: str = "judgments") -> tuple[dict[str, Any], list[str]]:
    """Yang et al.'s overall score level (Table 3; module notes): ``({...}, warnings)``.

    ``pearson``: ``{metric: {group: r}}`` over the (sample, system) pairs; ``pairs`` and
    ``common_questions`` per group; ``systems`` in first-seen order.
    """
    if questions < 1 or samples < 1:
        raise ScoringError("the overall score level needs at least 1 question per sample and 1 sample")
    by_system = _systems_by_question(candidates, path)
    systems = list(by_system)
    # Per candidate, what an overall score is made from: its per-question scores, and for BLEU (a
    # corpus score, not a mean) its statistics.
    per_question: dict[tuple[str, str], dict[str, float]] = {}
    bleu: dict[tuple[str, str], dict[str, BleuStats]] = {}
    for system, answers in by_system.items():
        for qid, c in answers.items():
            per_question[system, qid] = {**c.fixed, **adapted_scores(c, alpha=alpha, beta=beta, gamma=gamma)}
            bleu[system, qid] = {"BLEU-4": c.bleu, "BLEU-4-adapted": adapted_bleu_stats(c, alpha=alpha, beta=beta)}
    groups: dict[str, list[str]] = {}  # question ids every system answered, first-seen order
    for c in candidates:
        if all(c.judgment.qid in answers for answers in by_system.values()):
            for group in (c.question_type, OVERALL):
                if c.judgment.qid not in groups.setdefault(group, []):
                    groups[group].append(c.judgment.qid)
    warnings: list[str] = []
    pearsons: dict[str, dict[str, float | None]] = {m: {} for m in METRICS}
    pairs: dict[str, int] = {}
    for group, qids in groups.items():
        if len(qids) < questions:
            warnings.append(f"overall score level, {group}: {len(qids)} question(s) answered by every system, "
                            f"fewer than the {questions} a sample draws; no correlation")
            pairs[group] = 0
            for m in METRICS:
                pearsons[m][group] = None
            continue
        rng = np.random.default_rng(seed)
        human: list[float] = []
        metric_values: dict[str, list[float]] = {m: [] for m in METRICS}
        for _ in range(samples):
            drawn = [qids[i] for i in rng.choice(len(qids), size=questions, replace=False)]
            for system in systems:
                human.append(sum(by_system[system][qid].judgment.score for qid in drawn) / len(drawn))
                for m in METRICS:
                    metric_values[m].append(_overall_score(m, [per_question[system, qid] for qid in drawn],
                                                           [bleu[system, qid] for qid in drawn]))
        pairs[group] = len(human)
        for m in METRICS:
            pearsons[m][group] = pearson(human, metric_values[m])
    return {"systems": systems, "questions_per_sample": questions, "samples": samples, "seed": seed,
            "common_questions": {g: len(q) for g, q in groups.items()}, "pairs": pairs,
            "pearson": pearsons}, warnings


def system_summary(candidates: Sequence[Candidate], *, alpha: float = PAPER_ALPHA, beta: float = PAPER_BETA,
                   gamma: float = GAMMA, samples: int = INTERVAL_SAMPLES, seed: int = 0,
                   path: str = "judgments") -> dict[str, Any]:
    """Per system: its mean human score with a bootstrap interval over its questions
    (:func:`scoring.agreement.mean_interval`), each metric's overall score on all its questions
    (as :func:`overall_level` scores a sample), and per metric Kendall's tau-b between the
    systems' human scores and their metric scores (so between the two rankings, ties counted).
    """
    by_system = _systems_by_question(candidates, path)
    rows: list[dict[str, Any]] = []
    for system, answers in by_system.items():
        judged = list(answers.values())
        interval = mean_interval([c.judgment.score for c in judged], samples=samples, seed=seed)
        per_question = [{**c.fixed, **adapted_scores(c, alpha=alpha, beta=beta, gamma=gamma)} for c in judged]
        bleu = [{"BLEU-4": c.bleu, "BLEU-4-adapted": adapted_bleu_stats(c, alpha=alpha, beta=beta)} for c in judged]
        scores = {m: _overall_score(m, per_question, bleu) for m in METRICS}
        rows.append({"system": system, "candidates": len(judged),
                     "human": None if interval is None else asdict(interval),
                     "metrics": {m: None if math.isnan(v) else v for m, v in scores.items()}})
    human = [row["human"]["mean"] if row["human"] else math.nan for row in rows]
    tau = {m: kendall_tau_b(human, [math.nan if row["metrics"][m] is None else row["metrics"][m] for row in rows])
           for m in METRICS}
    ranked = sorted(range(len(rows)), key=lambda i: -human[i])
    for rank, i in enumerate(ranked, start=1):
        rows[i]["human_rank"] = rank
    return {"systems": rows, "samples": samples, "seed": seed, "kendall_tau": tau}


def _check_weight(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        raise ScoringError(f"{name} must be a finite number >= 0, got {value!r}")


def match_references(judgments: Sequence[Judgment], references: Mapping[str, Reference], *, level: Level = "char",
                     gamma: float = GAMMA, path: str = "judgments") -> list[Candidate]:
    """Every judgment prepared against its question's reference (an unknown question is an error)."""
    if level not in LEVELS:
        raise ScoringError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    out: list[Candidate] = []
    for judgment in judgments:
        reference = references.get(judgment.qid)
        if reference is None:
            raise InputFormatError("question is not in the reference file", path=path, line=judgment.line,
                                   qid=judgment.qid)
        out.append(prepare(judgment, reference, level=level, gamma=gamma, path=path))
    return out


def evaluate_metaeval(
    candidates: Sequence[Candidate],
    *,
    alpha: float = PAPER_ALPHA,
    beta: float = PAPER_BETA,
    gamma: float = GAMMA,
    compare: Sequence[tuple[str, str]] = DEFAULT_COMPARE,
    samples: int = PAPER_SAMPLES,
    seed: int | None = 0,
    sweep_alpha: Sequence[float] = (),
    sweep_beta: Sequence[float] = (),
    overall_questions: int = PAPER_OVERALL_QUESTIONS,
    overall_samples: int = PAPER_OVERALL_SAMPLES,
    path: str = "judgments",
) -> EvalResult:
    """Correlations per group, paired bootstraps of ``compare`` in every group, and the requested sweeps.

    ``metrics``: ``candidates`` (count per group), ``pearson`` (``{metric:
    {group: r}}``), ``bootstrap`` (a list of :meth:`CorrelationDifference.to_dict`),
    ``sweeps`` (when asked), ``agreement`` (when candidates carry two annotators'
    scores, :func:`annotator_agreement`), ``overall_level`` and ``systems`` (when they name
    their systems, :func:`overall_level` and :func:`system_summary`) and the settings.  One per-example record per
    candidate with the human score and every metric.
    """
    _check_weight("alpha", alpha)
    _check_weight("beta", beta)
    if not candidates:
        raise ScoringError("no candidate to analyse")
    levels = {c.level for c in candidates}
    if len(levels) > 1:
        raise ScoringError("candidates prepared at different levels cannot be compared")
    for pair in compare:
        for metric in pair:
            if metric not in METRICS:
                raise ScoringError(f"unknown metric {metric!r} to compare; expected one of {', '.join(METRICS)}")
    human = np.asarray([c.judgment.score for c in candidates], dtype=np.float64)
    scores = _scores(candidates, alpha=alpha, beta=beta, gamma=gamma)
    groups = _groups(candidates)
    warnings: list[str] = []
    unscorable = [c.judgment.qid for c in candidates if math.isnan(c.fixed["DeepRead-P"])]
    if unscorable:
        warnings.append(f"{len(unscorable)} candidate(s) have no content word in any reference and are left out "
                        f"of the Deep Read correlations (first: question {unscorable[0]!r})")
    tests = [
        bootstrap_correlation_difference(human[idx], scores[a][idx], scores[b][idx], names=(a, b), group=g,
                                         samples=samples, seed=seed).to_dict()
        for a, b in compare for g, idx in groups.items()
    ]
    metrics: dict[str, Any] = {
        "level": levels.pop(), "alpha": alpha, "beta": beta, "gamma": gamma,
        "candidates": {g: len(idx) for g, idx in groups.items()},
        "pearson": correlation_table(human, scores, groups),
        "bootstrap": tests,
    }
    sweeps: dict[str, Any] = {}
    if sweep_alpha:
        sweeps["alpha"] = sweep(candidates, parameter="alpha", values=sweep_alpha, alpha=alpha, beta=beta, gamma=gamma)
    if sweep_beta:
        sweeps["beta"] = sweep(candidates, parameter="beta", values=sweep_beta, alpha=alpha, beta=beta, gamma=gamma)
    if sweeps:
        metrics["sweeps"] = sweeps
    agreement = annotator_agreement(candidates)
    if agreement:
        metrics["agreement"] = agreement
    if any(c.judgment.system is not None for c in candidates):
        metrics["overall_level"], overall_warnings = overall_level(
            candidates, alpha=alpha, beta=beta, gamma=gamma, questions=overall_questions, samples=overall_samples,
            seed=seed, path=path)
        warnings += overall_warnings
        metrics["systems"] = system_summary(candidates, alpha=alpha, beta=beta, gamma=gamma,
                                            seed=seed if seed is not None else 0, path=path)
    records = [
        {"id": c.judgment.qid, "line": c.judgment.line, "question_type": c.question_type, "human": c.judgment.score,
         **({"system": c.judgment.system} if c.judgment.system is not None else {}),
         **{m: (None if math.isnan(float(scores[m][i])) else float(scores[m][i])) for m in METRICS}}
        for i, c in enumerate(candidates)
    ]
    return EvalResult(metrics=metrics, per_example=records, warnings=warnings)


# --------------------------------------------------------------------------- a table for people


FORMATS: tuple[str, ...] = ("json", "markdown", "csv", "latex")
_R = 3  # decimals of a correlation or a score in the tables


def _groups_header(counts: Mapping[str, int], what: str) -> tuple[Column, ...]:
    return tuple(Column(f"{g} ({what}={n})", decimals=_R) for g, n in counts.items())


def metaeval_tables(metrics: Mapping[str, Any]) -> list[Table]:
    """The results of :func:`evaluate_metaeval` as tables (:mod:`scoring.tables` writes them)."""
    counts: Mapping[str, int] = metrics["candidates"]
    groups = list(counts)
    text = Column("metric", numeric=False)
    tables = [Table(
        key="pearson",
        title=f"Question-level Pearson r with the human scores (level {metrics['level']}, "
              f"alpha {metrics['alpha']:g}, beta {metrics['beta']:g})",
        columns=(text, *_groups_header(counts, "n")),
        rows=tuple((metric, *(row[g] for g in groups)) for metric, row in metrics["pearson"].items()))]
    if metrics["bootstrap"]:
        first = metrics["bootstrap"][0]
        tables.append(Table(
            key="bootstrap",
            title=f"Paired bootstrap of r(a) - r(b) ({first['samples']} resamples, seed {first['seed']}, "
                  f"{100 * first['level']:g}% interval)",
            columns=(Column("a", numeric=False), Column("b", numeric=False), Column("group", numeric=False),
                     Column("r(a) - r(b)", decimals=_R, signed=True), Column("low", decimals=_R),
                     Column("high", decimals=_R), Column("wins"), Column("samples"), Column("p", decimals=_R)),
            rows=tuple((t["a"], t["b"], t["group"], t["difference"], t["ci"][0], t["ci"][1], t["wins"],
                        t["samples"], t["p_value"]) for t in metrics["bootstrap"])))
    if "agreement" in metrics:
        tables.append(Table(
            key="agreement",
            title="Agreement between annotators: Pearson r of the first and second annotator, "
                  "Krippendorff's alpha (ordinal), Cohen's kappa (two annotators)",
            columns=(Column("group", numeric=False), Column("candidates"), Column("Pearson r", decimals=_R),
                     Column("alpha", decimals=_R), Column("kappa", decimals=_R)),
            rows=tuple((g, a["candidates"], a["pearson"], a["alpha"], a["kappa"])
                       for g, a in metrics["agreement"].items()),
            notes=("kappa is given only where every candidate has exactly two scores",)))
    if "overall_level" in metrics:
        level = metrics["overall_level"]
        pairs: Mapping[str, int] = level["pairs"]
        tables.append(Table(
            key="overall",
            title=f"Overall score level: {level['questions_per_sample']} questions per sample, "
                  f"{level['samples']} samples, {len(level['systems'])} systems (seed {level['seed']})",
            columns=(text, *_groups_header(pairs, "pairs")),
            rows=tuple((metric, *(row[g] for g in pairs)) for metric, row in level["pearson"].items())))
    if "systems" in metrics:
        summary = metrics["systems"]
        names = list(METRICS)
        tables.append(Table(
            key="systems",
            title=f"Systems: mean human score with its {summary['samples']}-resample bootstrap interval "
                  f"(seed {summary['seed']}), and each metric's overall score",
            columns=(Column("system", numeric=False), Column("candidates"), Column("human", decimals=_R),
                     Column("low", decimals=_R), Column("high", decimals=_R), Column("human rank"),
                     *(Column(m, decimals=_R) for m in names)),
            rows=tuple((row["system"], row["candidates"],
                        *((row["human"]["mean"], row["human"]["low"], row["human"]["high"]) if row["human"]
                          else (None, None, None)),
                        row["human_rank"], *(row["metrics"][m] for m in names)) for row in summary["systems"])))
        tables.append(Table(
            key="ranking",
            title="Kendall's tau-b between the human ranking of the systems and each metric's",
            columns=(text, Column("tau-b", decimals=_R)),
            rows=tuple((m, tau) for m, tau in summary["kendall_tau"].items())))
    for parameter, rows in metrics.get("sweeps", {}).items():
        tables.append(Table(
            key=f"sweep-{parameter}",
            title=f"Sweep of {parameter}",
            columns=(Column(parameter, decimals=2), *(Column(f"{m} {g}", decimals=_R) for m in ADAPTED for g in groups)),
            rows=tuple((float(row[parameter]), *(row[m][g] for m in ADAPTED for g in groups)) for row in rows)))
    return tables


_TITLE = "Meta-evaluation of answer metrics against human judgments (Yang et al. 2018)"


def format_tables(metrics: Mapping[str, Any], fmt: str) -> str:
    """The tables of :func:`metaeval_tables` as ``markdown``, ``csv`` or ``latex``."""
    tables = metaeval_tables(metrics)
    if fmt == "markdown":
        return tables_markdown(tables, title=_TITLE)
    if fmt == "csv":
        return tables_csv(tables, title=_TITLE)
    if fmt == "latex":
        return tables_latex(tables, title=_TITLE, label_prefix="metaeval")
    raise ScoringError(f"unknown table format {fmt!r}; expected markdown, csv or latex")


def format_table(metrics: Mapping[str, Any]) -> str:
    """The tables as Markdown (``--table``)."""
    return format_tables(metrics, "markdown")


# --------------------------------------------------------------------------- command line


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _pair(text: str) -> tuple[str, str]:
    a, sep, b = text.partition(":")
    if not sep or a not in METRICS or b not in METRICS:
        raise argparse.ArgumentTypeError(f"expected METRIC:METRIC with metrics among {', '.join(METRICS)}, "
                                         f"got {text!r}")
    return a, b


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "metaeval",
        help="correlation of each metric with human judgments (Yang et al. 2018): per question, per system "
             "overall, annotator agreement, paired bootstrap, sweeps",
        description="Question-level Pearson correlation of ROUGE-L, BLEU-4 (plain and with the yes/no and "
                    "entity bonuses), EM/F1 and Deep Read P/R with 1-5 human scores, per question type and "
                    "overall; the paired bootstrap of the difference of two metrics' correlations; sweeps "
                    "of alpha and beta.",
    )
    parser.add_argument("judgments", metavar="JUDGMENTS",
                        help="JSON lines or .csv: question_id, answer, score (1-5) or scores (each "
                             "annotator's), [system], [question_type], [yesno_answer]")
    parser.add_argument("references", metavar="REF.jsonl",
                        help="MRC2018 reference file, or a released DuReader file (search.dev.json)")
    parser.add_argument("--level", choices=LEVELS, default="char",
                        help="char: white space removed, for Chinese (default); word: English words and "
                             "punctuation marks, lower-cased")
    parser.add_argument("--alpha", type=float, default=PAPER_ALPHA, help="yes/no bonus weight (default 2.0)")
    parser.add_argument("--beta", type=float, default=PAPER_BETA, help="entity bonus weight (default 1.0)")
    parser.add_argument("--compare", type=_pair, action="append", metavar="A:B",
                        help="bootstrap r(A) - r(B) in every group (repeatable; default "
                             "ROUGE-L-adapted:ROUGE-L and BLEU-4-adapted:BLEU-4)")
    parser.add_argument("--samples", type=int, default=PAPER_SAMPLES, help="bootstrap resamples (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--sweep-alpha", type=_floats, default=[], metavar="V,V,...",
                        help="correlations of the adapted metrics at each alpha (beta fixed)")
    parser.add_argument("--sweep-beta", type=_floats, default=[], metavar="V,V,...",
                        help="correlations of the adapted metrics at each beta (alpha fixed)")
    parser.add_argument("--overall-questions", type=int, default=PAPER_OVERALL_QUESTIONS, metavar="N",
                        help="overall score level (candidates with a system): questions per sample (default 30)")
    parser.add_argument("--overall-samples", type=int, default=PAPER_OVERALL_SAMPLES, metavar="N",
                        help="overall score level: samples (default 100)")
    parser.add_argument("--format", choices=FORMATS, default="json",
                        help="what is printed: the results as JSON (default), or their tables as Markdown, "
                             "CSV or LaTeX (booktabs)")
    parser.add_argument("--table", metavar="OUT.md", help="also write the results as Markdown tables")
    parser.add_argument("--per-example", metavar="OUT.json",
                        help="write each candidate's human score and metric values to this JSON file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> EvalResult:
    if args.samples < 1:
        raise ScoringError("--samples must be at least 1")
    judgments = load_judgments(args.judgments)
    references = load_references(args.references)
    candidates = match_references(judgments, references, level=args.level, path=args.judgments)
    result = evaluate_metaeval(
        candidates, alpha=args.alpha, beta=args.beta, compare=args.compare or DEFAULT_COMPARE,
        samples=args.samples, seed=args.seed, sweep_alpha=args.sweep_alpha, sweep_beta=args.sweep_beta,
        overall_questions=args.overall_questions, overall_samples=args.overall_samples, path=args.judgments,
    )
    if args.table:
        with open(args.table, "w", encoding="utf-8") as fh:
            fh.write(format_table(result.metrics))
    if args.format != "json":
        result.output = format_tables(result.metrics, args.format)
    return result
