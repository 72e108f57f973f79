#!/usr/bin/env python3
"""Readerboard's conversational baselines, in the interactive protocol (one JSON line each way).

    python3 converse_baseline.py            # ignores the history
    python3 converse_baseline.py --filter   # excludes sentences that overlap earlier answers

Reads requests from stdin ({"dialog", "turn", "id", "question", "passage" on a dialog's first turn,
"history": [{"question", "answer"}]}) and writes one answer per request to stdout ({"id", "answer",
"yesno", "followup"}).  The answer is the passage sentence with the most question words (lower-cased,
stop words left out), the earliest on ties; "CANNOTANSWER" when no sentence shares a word with the
question.  With ``--filter``, sentences that share more than half their words with an answer in the
history are not candidates (Siblini et al.'s filtering behaviour, done by hand): it can only be
helped by a history whose answers are right, and hurt by one that names the current answer.
Not tuned on any data.  Python 3.11 stdlib only.
"""

from __future__ import annotations

import json
import re
import sys

WORD = re.compile(r"\w+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
STOP = frozenset(
    "a an the of in on at to for from by with about as into than and or but not no is are was were be been "
    "do does did has have had it its this that these those there their they them he him his she her we our "
    "you your i me my what which who whom whose when where why how can could would should will did s".split()
)
CANNOT_ANSWER = "CANNOTANSWER"


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP}


def answer(passage: str, question: str, history: list[dict[str, str]], *, filtering: bool) -> str:
    sentences = [s for s in SENTENCE_END.split(passage) if s.strip()]
    asked = words(question)
    earlier = [words(h.get("answer", "")) for h in history if h.get("answer") != CANNOT_ANSWER]
    best, best_score = CANNOT_ANSWER, 0
    for sentence in sentences:
        tokens = words(sentence)
        if filtering and tokens and any(len(tokens & e) > len(tokens) / 2 for e in earlier if e):
            continue
        score = len(tokens & asked)
        if score > best_score:
            best, best_score = sentence.strip(), score
    return best


def main() -> int:
    filtering = "--filter" in sys.argv[1:]
    passages: dict[str, str] = {}
    for line in sys.stdin:
        request = json.loads(line)
        if "passage" in request:
            passages[request["dialog"]] = request["passage"]
        text = answer(passages.get(request["dialog"], ""), request["question"], request.get("history", []),
                      filtering=filtering)
        print(json.dumps({"id": request["id"], "answer": text, "yesno": "x", "followup": "y"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
