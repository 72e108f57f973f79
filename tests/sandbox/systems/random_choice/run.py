"""A nondeterministic system: answers each question with a word of its context chosen at random
(unseeded), so two runs on the same inputs answer differently.  The determinism check's case."""

import gzip
import json
import os
import random

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
            words = record["context"].split()
            for qa in record["qas"]:
                answers[qa["qid"]] = random.choice(words)
    with open(os.path.join(OUTPUT, dataset["output"]), "w", encoding="utf-8") as fh:
        json.dump(answers, fh)
    print(f"{dataset['name']}: {len(answers)} answers")
