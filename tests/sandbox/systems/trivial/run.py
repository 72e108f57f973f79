"""A trivial system: answers every question with the first three words of its context.

Used by the system tests and the overhead benchmark: it follows the run contract
(read /input/manifest.json, write /output/<name>.json) and does almost no work,
so a run's time is the platform's overhead.
"""

import gzip
import json
import os

INPUT = os.environ.get("READERBOARD_INPUT", "/input")
OUTPUT = os.environ.get("READERBOARD_OUTPUT", "/output")

with open(os.path.join(INPUT, "manifest.json"), encoding="utf-8") as fh:
    manifest = json.load(fh)
for dataset in manifest["datasets"]:
    answers = {}
    with gzip.open(os.path.join(INPUT, dataset["input"]), "rt", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if "header" in record:
                continue
            guess = " ".join(record["context"].split()[:3])
            for qa in record["qas"]:
                answers[qa["qid"]] = guess
    with open(os.path.join(OUTPUT, dataset["output"]), "w", encoding="utf-8") as fh:
        json.dump(answers, fh)
    print(f"{dataset['name']}: {len(answers)} answers")
