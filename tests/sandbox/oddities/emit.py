"""A system whose answers are valid JSON of the right shape, but one answer the platform cannot take.

ODDITY (set when the test bundles this script) picks it: a lone surrogate (the escape "\\ud800"),
NUL ("\\u0000"), an answer of 4001 characters, a number where a string goes, or lists nested three
deep in an answer's field.  Every other question is answered "x"; the first question of the first
dataset gets the oddity.  The run must fail as the team's fault (counted), never the platform's.
"""

import gzip
import json
import os
from collections.abc import Iterator

ODDITY = "surrogate"
ANSWERS: dict[str, object] = {
    "surrogate": "\ud800",
    "nul": "a\u0000b",
    "over_long": "x" * 4001,
    "non_string": 5,
    "nested": {"answer": [[["x"]]]},
}


def qids(path: str) -> Iterator[str]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            for qa in record.get("qas", []):
                yield qa["qid"]


manifest = json.load(open("/input/manifest.json", encoding="utf-8"))
for n, ds in enumerate(manifest["datasets"]):
    answers: dict[str, object] = {qid: "x" for qid in qids(os.path.join("/input", ds["input"]))}
    if n == 0:
        answers[next(iter(answers))] = ANSWERS[ODDITY]
    with open(os.path.join("/output", ds["output"]), "w", encoding="utf-8") as out:
        json.dump(answers, out)  # ensure_ascii: the surrogate and NUL go out as valid JSON escapes
print("wrote", ODDITY, flush=True)
