"""Not-answerable questions (NAQs) and their difficulty (Nakanishi et al. 2018, "Answerable or Not").

``naq-build`` turns a SQuAD-format file into the paper's dataset (COLING 2018,
section 3); ``naq-vectors`` trains small word vectors for its difficulty levels
where GloVe cannot be had.  The ``unanswerable`` command then scores
predictions on the result, per level.  Where the paper is silent we follow the
authors' released scripts (github.com/nknsh0000/createNAQs), and say so.

**Rotation** (3.1.2): each paragraph's questions go to the next paragraph of
the same article, the last paragraph's to the first.  An article with a single
paragraph has no adjacent one and gives no NAQ (the released scripts would
pair that paragraph with itself).  Questions without gold answers (SQuAD 2.0
input) are not moved.

**Drop rule** (footnote 2: questions "that accidentally have the corresponding
answers in a shifted passage are removed"): a question is dropped when any of
its gold answer texts is a substring of the new passage, case-sensitively and
without normalisation, as the released scripts test it.  It is the reading that
gives Table 3's dev row: SQuAD v1.1 dev -> 9,762 NAQs on 2,065 passages
(lower-casing both sides would give 9,696 on 2,064).

**Output**: SQuAD 2.0: each NAQ has ``is_impossible: true``, ``answers: []``,
its original answers as ``plausible_answers`` (their ``answer_start`` still
indexes the passage the question was written for), ``naq_source_id`` (the
original question's id), and a new id: the original one plus ``--id-suffix``.
``--mixed`` (default, the paper's dataset) adds the NAQs to the target
paragraph after its own answerable questions; ``--alone`` keeps only the
paragraphs that received NAQs, with only those.

**Difficulty** (3.2.1 (b), Table 4): ``ave_word_sim = 1/M sum_m max_n
cos(v_m^q, v_n^p)`` over the question's words, written to each NAQ's
``ave_word_sim``, and its level to ``level`` (a field the ``unanswerable``
command and the ``squad2`` suite read): ``LEVEL1`` below LOW, ``LEVEL2`` from
LOW up to HIGH, ``LEVEL3`` from HIGH (0.5 and 0.7 in the paper; the released
scripts use 0.8 for HIGH).

* Words (the paper is silent; the released scripts): split on white space,
  lower-cased (glove.6B is lower-cased), the characters ``, . ! ? ; : ( ) "``
  deleted, NLTK's English stop words (:data:`STOP_WORDS`) dropped.  The
  apostrophe stays: the scripts' pattern ``'[,.!?;:()''\\"\\"]'`` is two
  adjacent string literals, so ``tesla's`` is one word (not in glove.6B).
  A repeated question word counts each time (the formula's sum over m).
* Out-of-vocabulary words are skipped (the paper, 3.2.1), on both sides; so
  is a word whose vector is zero.  A question or passage left with no word
  scores 0 (LEVEL1), as in the released scripts.
* Each word's best cosine counts as at least 0, so the score lies in [0, 1] as
  Table 4's ranges assume (the released scripts start their maximum at 0).
* The released ``split_levels.py`` never resets that maximum between question
  words, so it averages a running maximum, which is never below the paper's
  formula; we compute the formula.

The paper's levels need glove.6B.100d (``--vectors glove.6B.100d.txt``).
``naq-vectors`` (PPMI + truncated SVD on the SQuAD files given, see
:mod:`scoring.wordvec`) only makes the tool runnable without it: its levels are
not the paper's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scoring.errors import InputFormatError
from scoring.result import EvalResult
from scoring.squad import load_squad_dataset, squad_questions, without_gc
from scoring.wordvec import FloatArray, WordVectors, load_glove, train_ppmi_svd, write_glove

# NLTK's English stop list, as the authors' scripts load it (their data/stopwords.txt, 153 words).
STOP_WORDS: frozenset[str] = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing a an the and but if or because as until while
of at by for with about against between into through during before after above below to from up down in out
on off over under again further then once here there when where why how all any both each few more most
other some such no nor not only own same so than too very s t can will just don should now d ll m o re ve y
ain aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn
""".split())

_DELETED = re.compile(r'[,.!?;:()"]')

LEVEL_FIELD = "level"
SCORE_FIELD = "ave_word_sim"
SOURCE_FIELD = "naq_source_id"
DEFAULT_ID_SUFFIX = "_naq"


def content_words(text: str) -> list[str]:
    """The words ``ave_word_sim`` compares (module docstring, "Words")."""
    words = (_DELETED.sub("", raw.lower()) for raw in text.split())
    return [w for w in words if w and w not in STOP_WORDS]


# --------------------------------------------------------------------------- difficulty


@dataclass(frozen=True)
class Thresholds:
    """LEVEL1 below ``low``, LEVEL2 in [low, high), LEVEL3 from ``high`` (the paper's Table 4)."""

    low: float = 0.5
    high: float = 0.7

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"need 0 <= low <= high <= 1, got {self.low} and {self.high}")

    def level(self, score: float) -> str:
        if score < self.low:
            return "LEVEL1"
        return "LEVEL2" if score < self.high else "LEVEL3"


def ave_word_sims(pairs: Sequence[tuple[str, str]], vectors: WordVectors) -> FloatArray:
    """``ave_word_sim`` of each (question, passage) pair; one matrix product per distinct passage."""
    scores = np.zeros(len(pairs))
    by_passage: dict[str, list[int]] = {}
    for i, (_, passage) in enumerate(pairs):
        by_passage.setdefault(passage, []).append(i)
    for passage, members in by_passage.items():
        passage_ids = vectors.ids(content_words(passage))
        question_ids = [vectors.ids(content_words(pairs[i][0])) for i in members]
        lengths = np.array([ids.size for ids in question_ids])
        if passage_ids.size == 0 or lengths.sum() == 0:
            continue
        cosines = vectors.unit[np.concatenate(question_ids)] @ vectors.unit[passage_ids].T
        # Clipped to [0, 1]: below 0 as Table 4's ranges assume, above 1 only by rounding.
        best = np.clip(cosines.max(axis=1), 0.0, 1.0)
        # Sum each question's run of words; questions with no word keep their 0.
        filled = np.flatnonzero(lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[filled]
        scores[np.array(members)[filled]] = np.add.reduceat(best, starts) / lengths[filled]
    return scores


def ave_word_sim(question: str, passage: str, vectors: WordVectors) -> float:
    return float(ave_word_sims([(question, passage)], vectors)[0])


# --------------------------------------------------------------------------- building


@dataclass
class NaqBuild:
    """The built document and what happened on the way."""

    document: dict[str, Any]
    naqs: list[dict[str, Any]]  # the NAQ qa objects inside ``document``, in order
    contexts: list[str]  # each NAQ's new passage
    passages: int  # paragraphs that received at least one NAQ
    source_questions: int
    dropped: int  # an answer occurs in the new passage
    not_moved: int  # no gold answer to keep as plausible
    single_paragraph_articles: int
    warnings: list[str] = field(default_factory=list)


def answer_in_passage(answers: Sequence[str], passage: str) -> bool:
    """The drop rule: any gold answer text occurs verbatim (case-sensitive) in the passage."""
    return any(answer in passage for answer in answers)


def _naq(qa: Mapping[str, Any], new_id: str) -> dict[str, Any]:
    return {
        "id": new_id,
        "question": qa.get("question", ""),
        "answers": [],
        "is_impossible": True,
        "plausible_answers": [dict(a) for a in qa["answers"]],
        SOURCE_FIELD: qa["id"],
    }


def _check_contexts(articles: Sequence[Any], path: str) -> None:
    for a, article in enumerate(articles):
        for p, paragraph in enumerate(article["paragraphs"]):
            if not isinstance(paragraph.get("context"), str):
                raise InputFormatError(f"data[{a}].paragraphs[{p}] should have a string 'context'", path=path)


def build_naqs(
    dataset: Mapping[str, Any], *, mixed: bool = True, id_suffix: str = DEFAULT_ID_SUFFIX, path: str = "dataset",
) -> NaqBuild:
    """NAQs by rotating each article's questions one paragraph on (module docstring)."""
    questions = squad_questions(dataset, path=path)
    articles: list[Any] = dataset["data"]
    _check_contexts(articles, path)
    taken = {q.qid for q in questions}
    build = NaqBuild({"version": "v2.0", "data": []}, [], [], 0, len(questions), 0, 0, 0)
    for article in articles:
        paragraphs = article["paragraphs"]
        if len(paragraphs) == 1:
            build.single_paragraph_articles += 1
        out_paragraphs = []
        for target, paragraph in enumerate(paragraphs):
            context = paragraph["context"]
            source = paragraphs[target - 1] if len(paragraphs) > 1 else {"qas": []}
            moved = _moved_questions(source["qas"], context, build, taken, id_suffix, path)
            build.naqs.extend(moved)
            build.contexts.extend([context] * len(moved))
            build.passages += bool(moved)
            own = [{**qa, "is_impossible": qa.get("is_impossible", not qa["answers"])} for qa in paragraph["qas"]]
            qas = (own if mixed else []) + moved
            if qas:
                out_paragraphs.append({**{k: v for k, v in paragraph.items() if k != "qas"}, "qas": qas})
        if out_paragraphs:
            build.document["data"].append({**{k: v for k, v in article.items() if k != "paragraphs"},
                                           "paragraphs": out_paragraphs})
    return build


def _moved_questions(
    qas: Sequence[Mapping[str, Any]], context: str, build: NaqBuild, taken: set[str], id_suffix: str, path: str,
) -> list[dict[str, Any]]:
    moved: list[dict[str, Any]] = []
    for qa in qas:
        answers = [a["text"] for a in qa["answers"]]
        if not answers:
            build.not_moved += 1
        elif answer_in_passage(answers, context):
            build.dropped += 1
        else:
            new_id = f"{qa['id']}{id_suffix}"
            if new_id in taken:
                raise InputFormatError(f"the new id {new_id!r} is already taken; choose another --id-suffix",
                                       path=path, qid=qa["id"])
            taken.add(new_id)
            moved.append(_naq(qa, new_id))
    return moved


def assign_levels(build: NaqBuild, vectors: WordVectors, thresholds: Thresholds) -> None:
    """Write ``ave_word_sim`` and ``level`` into every NAQ of ``build``."""
    scores = ave_word_sims([(qa["question"], c) for qa, c in zip(build.naqs, build.contexts)], vectors)
    for qa, score in zip(build.naqs, scores.tolist()):
        qa[SCORE_FIELD] = score
        qa[LEVEL_FIELD] = thresholds.level(score)


def vocabulary_of(build: NaqBuild) -> set[str]:
    """Every word whose vector the levels of ``build`` can use."""
    words: set[str] = set()
    for qa in build.naqs:
        words.update(content_words(qa["question"]))
    for context in set(build.contexts):
        words.update(content_words(context))
    return words


def _coverage(build: NaqBuild, vectors: WordVectors) -> float | None:
    words = [w for qa in build.naqs for w in content_words(qa["question"])]
    return sum(w in vectors.index for w in words) / len(words) if words else None


def summary(build: NaqBuild, *, mixed: bool, thresholds: Thresholds | None, vectors: WordVectors | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "mode": "mixed" if mixed else "alone",
        "source_questions": build.source_questions,
        "naq_questions": len(build.naqs),
        "naq_passages": build.passages,
        "dropped_answer_in_passage": build.dropped,
        "not_moved_without_answers": build.not_moved,
        "single_paragraph_articles": build.single_paragraph_articles,
        "output_questions": sum(len(p["qas"]) for a in build.document["data"] for p in a["paragraphs"]),
    }
    if thresholds is not None and vectors is not None:
        counts = {label: 0 for label in ("LEVEL1", "LEVEL2", "LEVEL3")}
        for qa in build.naqs:
            counts[qa[LEVEL_FIELD]] += 1
        out["thresholds"] = [thresholds.low, thresholds.high]
        out["levels"] = counts
        out["question_words_with_vectors"] = _coverage(build, vectors)
    return out


def write_json_compact(path: str, document: Any) -> None:
    """Write ``document`` as one line of JSON (as SQuAD's files are), atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        # json.dumps, not json.dump: only the former uses the C encoder.
        fh.write(json.dumps(document, ensure_ascii=False))
    os.replace(tmp, path)


# --------------------------------------------------------------------------- command line


# Below this share of question words with a vector, the levels mean little.
_LOW_COVERAGE = 0.5


@without_gc
def _run_build(args: argparse.Namespace) -> EvalResult:
    dataset = load_squad_dataset(args.dataset)
    build = build_naqs(dataset, mixed=args.mixed, id_suffix=args.id_suffix, path=args.dataset)
    vectors = None
    if args.vectors:
        vectors = load_glove(args.vectors, keep=vocabulary_of(build))
        assign_levels(build, vectors, args.thresholds)
    write_json_compact(args.output, build.document)
    per_example = [
        {"id": qa["id"], "source_id": qa[SOURCE_FIELD], "level": qa.get(LEVEL_FIELD), "ave_word_sim": qa.get(SCORE_FIELD)}
        for qa in build.naqs
    ]
    metrics = summary(build, mixed=args.mixed, thresholds=args.thresholds if vectors else None, vectors=vectors)
    coverage = metrics.get("question_words_with_vectors")
    if coverage is not None and coverage < _LOW_COVERAGE:
        # Cased vectors (glove.840B) or another language would leave most words out silently.
        build.warnings.append(f"warning: only {coverage:.0%} of the question words have a vector in {args.vectors}; "
                              "the words are lower-cased English (glove.6B's vocabulary)")
    return EvalResult(metrics, per_example, build.warnings)


def squad_texts(paths: Sequence[str]) -> list[str]:
    """Every distinct passage and question of the SQuAD-format files, in file order."""
    texts: dict[str, None] = {}
    for path in paths:
        dataset = load_squad_dataset(path)
        for question in squad_questions(dataset, path=path):
            texts.setdefault(str(question.qa.get("question", "")), None)
        _check_contexts(dataset["data"], path)
        for article in dataset["data"]:
            for paragraph in article["paragraphs"]:
                texts.setdefault(paragraph["context"], None)
    return list(texts)


def _run_vectors(args: argparse.Namespace) -> EvalResult:
    texts = [content_words(t) for t in squad_texts(args.datasets)]
    trained = train_ppmi_svd(texts, dim=args.dim, window=args.window, min_count=args.min_count,
                             max_words=args.max_words, seed=args.seed)
    write_glove(args.output, trained.words, trained.vectors)
    metrics = {"texts": len(texts), "tokens": trained.tokens, "cooccurring_pairs": trained.pairs,
               "words": len(trained.words), "dim": args.dim}
    return EvalResult(metrics)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


class _ThresholdsAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        try:
            setattr(namespace, self.dest, Thresholds(*values))
        except ValueError as exc:
            parser.error(f"{option_string}: {exc}")


_BUILD_EPILOG = """\
Rotation: each paragraph's questions go to the next paragraph of the same
article (the last paragraph's to the first).  Drop rule: a question is dropped
when any of its gold answer texts occurs in the new passage (case-sensitive
substring, as in the authors' scripts; on SQuAD v1.1 dev this gives the
paper's 9,762 NAQs on 2,065 passages).  Each NAQ gets answers [],
is_impossible true, plausible_answers (its original answers), naq_source_id
and the id ORIGINAL+SUFFIX.

With --vectors, each NAQ also gets ave_word_sim (the mean over its words of
the best cosine to a passage word; lower-cased, punctuation , . ! ? ; : ( ) "
deleted, NLTK stop words and words without a vector skipped) and level:
LEVEL1 below LOW, LEVEL2 from LOW to below HIGH, LEVEL3 from HIGH.  The
paper's levels need glove.6B.100d.txt; vectors from naq-vectors only make the
tool run.  Printed: counts (and the level distribution); --per-example writes
each NAQ's id, source id, level and score.
"""

_VECTORS_EPILOG = """\
GloVe cannot be downloaded here; this trains small vectors on the passages
and questions of the files given (each distinct text once), with numpy only:
the words naq-build compares (lower-cased, punctuation deleted, stop words
dropped), co-occurrence counts within --window words (1/distance weighting),
positive PMI with context smoothing 0.75, and a rank --dim randomised SVD
(seeded: the same files and options give the same file).  Output: GloVe's
text format (word and components, space separated, no header).  These
vectors let naq-build run; the paper's difficulty levels need glove.6B.100d.
"""


def register(subparsers: Any) -> None:
    build = subparsers.add_parser(
        "naq-build",
        help="not-answerable questions from a SQuAD file, with difficulty levels (Nakanishi et al. 2018)",
        description="Build not-answerable questions (NAQs) by moving each paragraph's questions to the next "
                    "paragraph, in SQuAD 2.0 format, optionally with difficulty levels (Nakanishi et al. 2018).",
        epilog=_BUILD_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build.add_argument("dataset", metavar="SQUAD.json", help="SQuAD-format dataset (v1.1 or v2.0)")
    build.add_argument("output", metavar="OUT.json", help="where to write the SQuAD 2.0 dataset")
    mode = build.add_mutually_exclusive_group()
    mode.add_argument("--mixed", dest="mixed", action="store_true", default=True,
                      help="the NAQs together with the original questions (default; the paper's dataset)")
    mode.add_argument("--alone", dest="mixed", action="store_false", help="the NAQs only")
    build.add_argument("--vectors", metavar="GLOVE.txt",
                       help="word vectors in GloVe's text format (glove.6B.100d.txt for the paper's levels); "
                            "without them no level is assigned")
    build.add_argument("--thresholds", nargs=2, type=float, metavar=("LOW", "HIGH"), default=Thresholds(),
                       action=_ThresholdsAction,
                       help="level boundaries on ave_word_sim (default 0.5 0.7, the paper's Table 4; "
                            "the authors' released code used 0.8 for the upper bound)")
    build.add_argument("--id-suffix", default=DEFAULT_ID_SUFFIX, metavar="SUFFIX",
                       help=f"appended to the original id to make each NAQ's id (default {DEFAULT_ID_SUFFIX!r})")
    build.add_argument("--per-example", metavar="OUT.json",
                       help="write each NAQ's id, source id, level and ave_word_sim to this JSON file")
    build.set_defaults(run=_run_build)

    vectors = subparsers.add_parser(
        "naq-vectors",
        help="train small word vectors (GloVe text format) on SQuAD files, for naq-build's levels",
        description="Train word vectors on SQuAD-format files with PPMI and a truncated SVD (numpy only), "
                    "written in GloVe's text format.",
        epilog=_VECTORS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    vectors.add_argument("datasets", nargs="+", metavar="SQUAD.json", help="SQuAD-format files to learn from")
    vectors.add_argument("output", metavar="OUT.txt", help="where to write the vectors")
    vectors.add_argument("--dim", type=_positive, default=100, help="dimensions (default 100, as glove.6B.100d)")
    vectors.add_argument("--window", type=_positive, default=5, help="words on each side counted as context (default 5)")
    vectors.add_argument("--min-count", type=_positive, default=2, help="ignore words seen fewer times (default 2)")
    vectors.add_argument("--max-words", type=_positive, default=50_000,
                         help="keep at most this many words, the most frequent (default 50000)")
    vectors.add_argument("--seed", type=int, default=0, help="seed of the randomised SVD (default 0)")
    vectors.set_defaults(run=_run_vectors)
