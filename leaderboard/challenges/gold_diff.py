"""Two gold files of a dataset, question by question: what a replacement adds, removes and changes.

Only what scoring reads of the answers is compared, read with the same ``scoring/`` loader that
scores the file, so a file that only reorders or reformats its questions changes nothing.  Pure: it
reads files and writes nothing; the reload plan (``submissions/reload.py``) says it in words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scoring import coqa, deepread, mrc2018, mrqa, quac, squad
from scoring.inputs import coqa_qid


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def gold_answers(suite_key: str, path: str) -> dict[str, str]:
    """``{qid: what scoring reads of its answers}`` (canonical JSON) of a gold file.

    Only what can change a score: MRQA's, SQuAD's and CoQA's answer strings (as sets: the
    metrics take the best over them), DuReader's answers, yes/no and entity answers and
    question type, QuAC's references and dialog acts, Deep Read's answer keys, marked sentences and
    the story's sentences.
    """
    if suite_key == "mrqa":
        gold = mrqa.load_mrqa_gold(path, strict=True)
        return {qid: _canonical(sorted(set(q.answers))) for qid, q in gold.questions.items()}
    if suite_key == "mrc2018":
        refs = mrc2018.load_mrc2018(path, reference=True)
        return {str(qid): _canonical([q.answers, q.yesno_answers, q.entity_answers, q.question_type])
                for qid, q in refs.items()}
    if suite_key == "squad2":
        questions = squad.squad_questions(squad.load_squad_dataset(path), path=path)
        return {q.qid: _canonical(sorted(set(q.answers))) for q in questions}
    if suite_key == "quac":
        dialogs = quac.load_quac_dataset(path, strict=True)
        return {q.qid: _canonical([q.refs, q.yesno, q.followup]) for d in dialogs for q in d.questions}
    if suite_key == "coqa":
        turns = coqa.load_coqa_dataset(path, strict=True).turns
        return {coqa_qid(*key): _canonical(sorted(set(golds))) for key, golds in turns.items()}
    if suite_key == "deepread":
        data = deepread.load_deepread_data(path)
        # The story's sentences too: answers are matched to them, and AutSent marks them.
        return {q.id: _canonical([sorted(set(q.answers)), sorted(q.answer_sentences or ()),
                                  list(data.stories[q.story].sentences.items()) if q.story is not None else None])
                for q in data.questions}
    raise NotImplementedError(f"metric suite {suite_key!r}: no question-by-question comparison")


@dataclass(frozen=True)
class GoldDiff:
    added: int
    removed: int
    changed: int  # questions in both files whose answers differ
    n_questions: int  # in the new file


def gold_diff(old: Mapping[str, str], new: Mapping[str, str]) -> GoldDiff:
    both = old.keys() & new.keys()
    return GoldDiff(
        added=len(new.keys() - old.keys()),
        removed=len(old.keys() - new.keys()),
        changed=sum(1 for qid in both if old[qid] != new[qid]),
        n_questions=len(new),
    )
