"""A phase's human evaluation round, as the spec sets it up (``phases[].human_eval``).

What the spec may say and what each value may be live here, below the judging app, so that a typo
fails the load rather than the round weeks later: the judging app (``judging.services.round_create``)
takes the same scales, strata and bounds from here, and an organizer creates the round from these
settings in the console or with ``manage.py judging_round_create``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import models

from leaderboard.core.errors import ServiceError


class Scale(models.TextChoices):
    FIVE_POINT = "five_point", "1-5 (Yang et al. 2018)"
    CORRECT_PARTLY_WRONG = "correct_partly_wrong", "correct / partly correct / wrong"


class Stratify(models.TextChoices):
    NONE = "", "no strata"
    QUESTION_TYPE = "question_type", "by question type"
    DATASET = "dataset", "by dataset"


MAX_QUESTIONS = 5000
MAX_JUDGES_PER_ITEM = 10
# The suites whose questions carry a type to stratify by (DuReader's YES_NO, ENTITY, DESCRIPTION).
TYPED_SUITES = frozenset({"mrc2018"})

HUMAN_EVAL_KEYS = ("name", "top", "questions", "seed", "stratify_by", "judges_per_item", "scale", "guideline",
                   "deadline", "disagreement_margin", "judges")


def _whole(value: Any, *, low: int, high: int, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ServiceError(f"{where}: expected a whole number from {low} to {high}, found {value!r}")
    return value


def human_eval_parse(raw: Any, *, where: str, suite: str) -> dict[str, Any]:
    """``phases[].human_eval`` as stored on the phase ({} for none), every value checked."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ServiceError(f"{where}: expected a mapping like {{top: 5, questions: 500}}, found {raw!r}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        at = f"{where}.{key}"
        if key in ("top", "judges_per_item"):
            out[key] = _whole(value, low=1, high=MAX_JUDGES_PER_ITEM if key == "judges_per_item" else 1000, where=at)
        elif key == "questions":
            out[key] = _whole(value, low=1, high=MAX_QUESTIONS, where=at)
        elif key == "seed":
            out[key] = _whole(value, low=0, high=2**31 - 1, where=at)
        elif key == "scale":
            if value not in Scale.values:
                raise ServiceError(f"{at}: {value!r} is not one of {', '.join(Scale.values)}")
            out[key] = value
        elif key == "stratify_by":
            value = "" if value in (None, "none") else value
            if value not in Stratify.values:
                raise ServiceError(f"{at}: {value!r} is not one of question_type, dataset, none")
            if value == Stratify.QUESTION_TYPE and suite not in TYPED_SUITES:
                raise ServiceError(f"{at}: the {suite} suite's questions have no type; stratify by dataset")
            out[key] = value
        elif key == "disagreement_margin":
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ServiceError(f"{at}: expected a number, 0 or more, found {value!r}")
            out[key] = float(value)
        elif key == "deadline":
            if isinstance(value, str) and value.endswith("Z"):
                value = value[:-1] + "+00:00"
            try:
                moment = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is None or moment.utcoffset() != dt.timedelta(0):
                raise ServiceError(f"{at}: expected a time in UTC with a Z, like 2019-08-01T00:00:00Z, found {value!r}")
            out[key] = moment.isoformat().replace("+00:00", "Z")
        elif key in ("name", "guideline"):
            if not isinstance(value, str) or not value.strip() or (key == "name" and len(value) > 100):
                raise ServiceError(f"{at}: expected text{' of up to 100 characters' if key == 'name' else ''}")
            out[key] = value.strip() if key == "name" else value
        elif key == "judges":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ServiceError(f"{at}: expected a list of usernames, found {value!r}")
            out[key] = list(dict.fromkeys(value))
        else:
            raise ServiceError(f"{at}: unknown key (human_eval takes {', '.join(HUMAN_EVAL_KEYS)})")
    return out
