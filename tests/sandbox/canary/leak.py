"""A hostile system that tries to carry the hidden test data out through one side channel.

MODE (set when the test bundles this script) picks the channel:

- unknown_ids: the real answers' ids plus five made-up ids that quote hidden questions and contexts;
- empty: no answer at all (the reason used to name the set's size and five real ids);
- exit_code: exit with a code computed from the hidden data;
- broken_json: JSON that breaks at a position computed from the hidden data;
- timing: sleep for a time computed from the hidden data, then answer nothing;
- log: print every hidden input to stdout;
- mounts: print what the mounts and the input files' metadata say (host paths, link counts, times).
- refused_answer: answers quoting the hidden questions, one with a NUL (an answer the platform refuses).
"""

import gzip
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

MODE = "log"
INPUT = "/input"
OUTPUT = "/output"


def records(path: str) -> list[dict[str, Any]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    if path.endswith((".jsonl", ".jsonl.gz")):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


def questions(record: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(qid, question, context) for an MRQA context record."""
    for qa in record.get("qas", []):
        yield qa.get("qid", ""), qa.get("question", ""), record.get("context", "")


manifest = json.load(open(os.path.join(INPUT, "manifest.json"), encoding="utf-8"))
data = {}
for ds in manifest["datasets"]:
    found = []
    for record in records(os.path.join(INPUT, ds["input"])):
        if "header" in record:
            found.append(("", json.dumps(record["header"]), ""))
        found.extend(questions(record))
    data[ds["output"]] = found
everything = json.dumps(data)

if MODE == "log":
    print(everything)
    sys.stderr.write(everything[-20000:])
    for name, found in data.items():
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            json.dump({qid: "x" for qid, _, _ in found if qid}, out)
elif MODE == "unknown_ids":
    for name, found in data.items():
        answers = {qid: "x" for qid, _, _ in found if qid}
        # The last questions first: the reason quotes the first few unknown ids.
        for i, (qid, question, context) in enumerate(reversed(found[-8:])):
            answers[f"LEAK{i} q={question} | ctx={context[:300]} | id={qid}"] = "x"
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            json.dump(answers, out)
elif MODE == "empty":
    for name in data:
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            out.write("{}")
elif MODE == "exit_code":
    sys.exit(1 + sum(map(ord, everything)) % 200)
elif MODE == "broken_json":
    for name in data:
        position = sum(map(ord, everything)) % 500
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            out.write("{" + " " * position + '"' + everything[:200])
elif MODE == "mounts":
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            if any(f" {point} " in line for point in ("/input", "/output", "/system")):
                print("MOUNT", line.strip())
    for name in sorted(os.listdir(INPUT)):
        info = os.stat(os.path.join(INPUT, name))
        print(f"FILE {name} nlink={info.st_nlink} mtime={int(info.st_mtime)}")
    for name in data:
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            out.write("{}")
elif MODE == "refused_answer":
    # Every question answered with its own text and context, then a NUL at a position computed from
    # the hidden data: an answer the platform cannot store, whose refusal must carry none of it.
    for name, found in data.items():
        answers = {qid: f"{question} | {context[:300]}" for qid, question, context in found if qid}
        first = next(iter(answers))
        cut = sum(map(ord, everything)) % 50
        answers[first] = answers[first][:cut] + "\u0000" + answers[first][cut:]
        with open(os.path.join(OUTPUT, name), "w", encoding="utf-8") as out:
            json.dump(answers, out)
elif MODE == "timing":
    time.sleep((sum(map(ord, everything)) % 997) / 1000 + 1)
    sys.exit(0)
