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
    # The conversational demos (issue 11): the QuAC and CoQA excerpts as they are, whole.
    for folder, name in (("quac", "val_v0.2.json"), ("coqa", "coqa-dev-v1.0.json")):
        (OUT / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shared / "data" / f"{folder}-excerpt" / name, OUT / folder / name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=HERE.parent.parent.parent / "shared")
    build(parser.parse_args().shared)
