"""Rebuild the committed demo data from ../shared/data (run by developers, not by the demo).

The demo must work on a machine without ../shared, so its small data files are
committed under deploy/demo/data/ with their licences (SOURCES.md there).  This
script documents exactly how they were cut:

- MRQA-format sub-domains: each file's contexts are split in two halves, the
  first half the public "dev" portion, the second the hidden "test" portion.
- DuReader: the 100 labelled "search" dev questions, documents reduced to
  title and paragraphs, split 50/50 into dev and test references.
- The MRQA 2019 hidden-test leaderboard export, copied as is (MIT).
- A small Split I training sample: contexts 25-84 of the official MRQA SQuAD
  dev file (the demo's SQuAD dev and test halves come from its first 25), with
  the header's split set to "train".  Real MRQA teams train on SQuAD's train
  split; a slice of the dev file keeps the demo small and its licence the same.

Usage: python deploy/demo/build_data.py [--shared ../shared]
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "data"
TRAIN_CONTEXTS = slice(25, 85)  # of mrqa-squad-dev/SQuAD.jsonl.gz; mrqa-mini's SQuAD is its first 25
MRQA_FILES = ["SQuAD", "XQuAD-en", "DuoRC.SelfRC", "AdversarialQA", "QuAC", "CoQA", "DROP", "Quoref",
              "DuoRC.ParaphraseRC"]


def _write_gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(path, "wb", mtime=0) as fh:
        fh.write("".join(line + "\n" for line in lines).encode("utf-8"))


def build(shared: Path) -> None:
    for name in MRQA_FILES:
        lines = gzip.open(shared / "data" / "mrqa-mini" / f"{name}.jsonl.gz", "rt", encoding="utf-8").read().splitlines()
        header, contexts = json.loads(lines[0]), lines[1:]
        half = max(1, len(contexts) // 2) if len(contexts) > 1 else 1
        for portion, part in (("dev", contexts[:half]), ("test", contexts[half:] or contexts[:half])):
            head = {"header": {**header["header"], "split": portion}}
            _write_gz(OUT / "mrqa" / f"{name}.{portion}.jsonl.gz", [json.dumps(head)] + part)

    lines = gzip.open(shared / "data" / "mrqa-squad-dev" / "SQuAD.jsonl.gz", "rt", encoding="utf-8").read().splitlines()
    head = {"header": {**json.loads(lines[0])["header"], "split": "train"}}
    _write_gz(OUT / "mrqa" / "SQuAD.train.jsonl.gz", [json.dumps(head)] + lines[1:][TRAIN_CONTEXTS])

    records = []
    for line in (shared / "data" / "dureader-demo" / "search.dev.json").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        docs = [{"title": d.get("title", ""), "paragraphs": d.get("paragraphs", [])[:3]} for d in r["documents"][:3]]
        records.append({
            "question_id": r["question_id"], "question": r["question"], "question_type": r["question_type"],
            "fact_or_opinion": r.get("fact_or_opinion", ""), "source": "search", "documents": docs,
            "answers": r["answers"], "yesno_answers": r.get("yesno_answers", []),
            "entity_answers": r.get("entity_answers") or [[]],
        })
    (OUT / "dureader").mkdir(parents=True, exist_ok=True)
    for portion, part in (("dev", records[:50]), ("test", records[50:])):
        (OUT / "dureader" / f"search.{portion}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in part), encoding="utf-8"
        )
    (OUT / "mrqa2019").mkdir(parents=True, exist_ok=True)
    shutil.copy(shared / "data" / "mrqa-results" / "ood-test-results.json", OUT / "mrqa2019" / "ood-test-results.json")
    _conversational(shared)


def _halves(items: list[Any]) -> tuple[list[Any], list[Any]]:
    """The first half (public dev) and the rest (hidden test), as the MRQA files above are cut."""
    half = max(1, len(items) // 2) if len(items) > 1 else 1
    return items[:half], items[half:] or items[:half]


def _conversational(shared: Path) -> None:
    """The conversational demos' dev and test portions, the same dialogs public and hidden as in
    the MRQA demo (whose QuAC and CoQA files come from the same excerpts):

    - QuAC: the excerpt's dialogs in order, halved as the MRQA files are (dev: the first two).
    - CoQA: dev is the excerpt's one story, whole (with its additional answers), the one the MRQA
      demo's CoQA dev half holds; test is the story of that file's hidden test half, turned back
      into CoQA's format: each question's first answer is the free-form answer, its second the
      rationale span; one turn the mini file left out (no verbatim answer) is skipped, and the turns
      renumbered from 1, as CoQA's scorer expects.
    """
    quac = json.loads((shared / "data" / "quac-excerpt" / "val_v0.2.json").read_text(encoding="utf-8"))
    dialogs = [(article, paragraph) for article in quac["data"] for paragraph in article["paragraphs"]]
    (OUT / "quac").mkdir(parents=True, exist_ok=True)
    for portion, part in zip(("dev", "test"), _halves(dialogs), strict=True):
        articles: list[dict[str, Any]] = []
        for article, paragraph in part:
            if not articles or articles[-1]["title"] != article["title"]:
                articles.append({**{k: v for k, v in article.items() if k != "paragraphs"}, "paragraphs": []})
            articles[-1]["paragraphs"].append(paragraph)
        (OUT / "quac" / f"quac-{portion}.json").write_text(
            json.dumps({**quac, "data": articles}, ensure_ascii=False), encoding="utf-8")

    (OUT / "coqa").mkdir(parents=True, exist_ok=True)
    shutil.copy(shared / "data" / "coqa-excerpt" / "coqa-dev-v1.0.json", OUT / "coqa" / "coqa-dev.json")
    lines = gzip.open(shared / "data" / "mrqa-mini" / "CoQA.jsonl.gz", "rt", encoding="utf-8").read().splitlines()
    stories = []
    for line in _halves(lines[1:])[1]:
        context = json.loads(line)
        story_id = context["qas"][0]["qid"].rpartition("_")[0]
        questions, answers = [], []
        for turn, qa in enumerate(context["qas"], start=1):
            free, rationale = qa["answers"][0], qa["answers"][-1]
            start = context["context"].find(rationale)
            questions.append({"input_text": qa["question"], "turn_id": turn})
            answers.append({"input_text": free, "span_text": rationale, "span_start": start,
                            "span_end": start + len(rationale) if start >= 0 else -1, "turn_id": turn})
        stories.append({"source": "wikipedia", "id": story_id, "filename": "", "story": context["context"],
                        "questions": questions, "answers": answers})
    (OUT / "coqa" / "coqa-test.json").write_text(json.dumps({"version": "1.0", "data": stories}, ensure_ascii=False),
                                                 encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=HERE.parent.parent.parent / "shared")
    build(parser.parse_args().shared)
