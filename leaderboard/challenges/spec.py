"""What a challenge spec may say: every key ``challenge_load`` reads, checked before anything is written.

A key the loader does not know is not an option it may ignore: ``file:`` for
``files:`` leaves a dataset without gold, and a misspelt ``alpha`` scores with
the default.  So every mapping of a spec is checked against :data:`SPEC_KEYS`
(the message names the nearest valid key), suite options against the suite's
options dataclass, and what would break the challenge later is refused now:
a key given twice, two datasets (or phases) with one slug or name, a Split III
dataset with a dev portion, and an MRQA header naming another dataset or
portion than the spec does.

``spec_reference`` says what every key here means (the organizers' spec page is generated from it);
a test keeps the two in step, so a key added to the loader is documented there (or the load refuses it).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from django.db import models

from leaderboard.challenges.budget_tracks import TRACK_KEYS
from leaderboard.challenges.human_eval import HUMAN_EVAL_KEYS
from leaderboard.challenges.models import Challenge, Dataset, FilePortion, Phase, Split
from leaderboard.challenges.suites import SUITES
from leaderboard.challenges.suites.base import SuiteOptions
from leaderboard.core.errors import ServiceError
from leaderboard.sandbox.contract import Limits, SystemSettings
from scoring.formats import mrqa_header


class SpecError(ServiceError):
    """A challenge spec that cannot be loaded; the message names the key."""


# A mapping's keys; a key whose value is itself checked maps to its own Keys.  A list
# under such a key is a list of those mappings (phases, datasets).
Keys = Mapping[str, "Keys | None"]

_QUOTA: Keys = {"per_day": None, "total": None, "concurrent": None}
PHASE_KEYS: Keys = {
    "slug": None, "name": None, "kind": None, "portion": None, "opens_at": None, "closes_at": None,
    "quota": _QUOTA, "allowed_kinds": None, "protocol": None, "board_public": None,
    # Each track's keys are checked by budgets.budget_tracks_parse (its limits are its axes).
    "budget_tracks": {key: None for key in TRACK_KEYS},
    # An evaluation campaign on archived systems of another phase (submissions.campaigns).
    "campaign": {"of": None, "systems": None, "runtime": None,
                 "limits": {name: None for name in Limits.__dataclass_fields__}},
    # A human evaluation round's settings; each value is checked by human_eval.human_eval_parse.
    "human_eval": {key: None for key in HUMAN_EVAL_KEYS},
}
DATASET_KEYS: Keys = {
    "slug": None, "name": None, "split": None, "description": None, "sealed_alias": None, "revealed": None,
    "portions": None, "files": {portion.value: None for portion in FilePortion},
    # A mapping of the organizer's own tag names; checked by dataset_tags_parse, not here.
    "tags": None,
    # The one phase the dataset belongs to (a campaign's new data); absent: every phase with its portion.
    "phase": None,
}
# From the dataclasses the loader builds, so a setting added there is accepted here.
SYSTEMS_KEYS: Keys = {
    **{name: None for name in SystemSettings.__dataclass_fields__ if name != "limits"},
    "limits": {name: None for name in Limits.__dataclass_fields__},
}
SPEC_KEYS: Keys = {
    "slug": None, "title": None, "description": None, "is_public": None, "staff": None,
    "metric_suite": None,
    # Checked against the suite's options (SUITE_OPTIONS), which depend on metric_suite.
    "suite_options": None,
    "ranking_rule": None,
    "ranking": {"splits": None, "datasets": None, "incomplete": None},
    "sealed_aggregates": None,
    "max_team_size": None,
    # Read by team_rules_parse; the accounts app keeps the rules (accounts.services.team_rules_set).
    "teams": {"approval": None},
    # Checked by the loader (services._breakdown_min_questions).
    "breakdowns": {"min_questions": None},
    "systems": SYSTEMS_KEYS,
    # Whose archived systems a campaign may run again (CampaignConsent).
    "campaigns": {"consent": None},
    "phases": PHASE_KEYS,
    "datasets": DATASET_KEYS,
}


# --------------------------------------------------------------------------- suite options


# Each suite's options dataclass (its fields, their defaults and meanings live there only).
SUITE_OPTIONS: dict[str, type[SuiteOptions]] = {key: suite.options_type for key, suite in SUITES.items()}


def suite_options_parse(suite: str, raw: Any, *, where: str) -> SuiteOptions:
    """The suite's options dataclass from a spec's ``suite_options`` (absent: the defaults).

    The one reading of suite options: the loader checks a spec with it, and
    :func:`suite_options_of` builds a loaded challenge's options with it from what is stored.
    """
    options_type = SUITE_OPTIONS[suite]
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: expected a mapping like {{alpha: 1.0}}, found {raw!r}")
    fields = {f.name: f for f in dataclasses.fields(options_type)}
    for key in raw:
        if key not in fields:
            known = f"the {suite} suite takes {', '.join(fields)}" if fields else f"the {suite} suite takes none"
            raise SpecError(f"{where}: unknown option {key!r}{_nearest(str(key), fields) or ''} ({known})")
    values = dict(raw)
    for name, value in raw.items():
        meta, kind = fields[name].metadata, fields[name].type
        if kind == "bool" and not isinstance(value, bool):
            raise SpecError(f"{where}.{name}: expected true or false, found {value!r}")
        if kind == "float":
            low, high = meta["bounds"]
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                span = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
                raise SpecError(f"{where}.{name}: expected a number {span}, found {value!r}")
            values[name] = float(value)  # "alpha: 1" is 1.0
        if kind == "str" and value not in meta["choices"]:
            raise SpecError(f"{where}.{name}: {value!r} is not one of {', '.join(meta['choices'])}"
                            f"{_nearest(str(value), meta['choices']) or ''}")
    return options_type(**values)


def suite_options_of(challenge: Challenge) -> SuiteOptions:
    """A loaded challenge's suite options, as the suites take them.

    Stored as the spec gave them (``Challenge.suite_options``, checked when it was loaded, and
    what ``scoring_version_of`` digests); absent keys take the dataclass's defaults.
    """
    return suite_options_parse(challenge.metric_suite, challenge.suite_options or {},
                               where=f"{challenge.slug}.suite_options")


# --------------------------------------------------------------------------- reading and checking


def team_rules_parse(raw: object, *, where: str) -> bool:
    """Whether a spec's ``teams:`` mapping (``{approval: required | off}``, absent: off) asks for
    each new team to be approved by an organizer before it submits."""
    if raw is None:
        return False
    approval = raw.get("approval", "off") if isinstance(raw, dict) else None
    if approval is False:
        approval = "off"  # YAML reads an unquoted off as false
    if approval not in ("required", "off"):
        raise SpecError(f"{where}: expected {{approval: required}} or {{approval: off}}, found {raw!r}")
    return approval == "required"


def _nearest(key: str, known: Any) -> str | None:
    match = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean {match[0]!r}?" if match else None


def _keys_check(value: Any, keys: Keys, where: str) -> None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            _keys_check(item, keys, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        return  # the loader says what it expected
    for key, item in value.items():
        if key not in keys:
            hint = _nearest(str(key), keys) or f"; the keys here are {', '.join(keys)}"
            raise SpecError(f"{where}: unknown key {key!r}{hint}")
        nested = keys[key]
        if nested is not None:
            _keys_check(item, nested, f"{where}.{key}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML keeps the last of two equal keys; a spec with one is refused instead."""


def _mapping_unique(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # "<<: *defaults" and then overriding one of them is what merge keys are for
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        try:
            if key in seen:
                raise SpecError(f"line {line}: key {key!r} is given twice in one mapping (first on line "
                                f"{seen[key]}); YAML would silently keep the last")
            seen[key] = line
        except TypeError:
            continue  # an unhashable key: construct_mapping refuses it
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_unique)


def _keys_unique(spec_path: Path) -> None:
    # The loader has read the file already (yaml.safe_load); a spec is small, so reading it
    # again to see what safe_load silently dropped costs nothing.
    try:
        yaml.load(spec_path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # a SafeLoader
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return  # the loader reported it
    except SpecError as exc:
        raise SpecError(f"{spec_path}, {exc.message}") from None


def spec_check(spec: Mapping[str, Any], *, spec_path: Path | None = None) -> None:
    """Refuse, before anything is stored, what the loader would otherwise accept and regret.

    Keys anywhere (and, given the file, a key given twice), suite options, duplicate phases
    and datasets, Split III dev portions.  Values the loader reads itself (dates, choices,
    types) are left to it.
    """
    if spec_path is not None:
        _keys_unique(spec_path)
    where = str(spec.get("slug") or "challenge")
    _keys_check(dict(spec), SPEC_KEYS, where)
    if spec.get("metric_suite") in SUITE_OPTIONS:
        suite_options_parse(str(spec["metric_suite"]), spec.get("suite_options"), where=f"{where}.suite_options")
    for kind in ("phases", "datasets"):
        items = spec.get(kind)
        if isinstance(items, list):
            _unique(kind, [(i, item) for i, item in enumerate(items) if isinstance(item, dict)], where)
    for i, dataset in enumerate(spec.get("datasets") or []):
        if isinstance(dataset, dict) and str(dataset.get("split")) == Split.III:
            _no_dev_portion(dataset, f"{where}.datasets[{i}]")
    _lengths_check(spec, where)
    _tags_check(spec, where)
    _campaigns_check(spec, where)


CAMPAIGN_SYSTEMS = ("final", "all")


def _campaigns_check(spec: Mapping[str, Any], where: str) -> None:
    """A campaign runs the systems of another phase of the spec, that is not a campaign itself, and
    takes no uploads; a dataset given to one phase names a phase of the spec."""
    phases = [p for p in spec.get("phases") or [] if isinstance(p, dict)]
    by_slug = {str(p.get("slug")): p for p in phases}
    for i, phase in enumerate(spec.get("phases") or []):
        if not isinstance(phase, dict) or phase.get("campaign") is None:
            continue
        at = f"{where}.phases[{i}].campaign"
        campaign = phase["campaign"]
        if not isinstance(campaign, dict) or "of" not in campaign:
            raise SpecError(f"{at}: expected a mapping like {{of: test, systems: final}}, found {campaign!r}")
        source = by_slug.get(str(campaign["of"]))
        if source is None or source is phase:
            others = ", ".join(s for s, p in by_slug.items() if p is not phase and p.get("campaign") is None)
            raise SpecError(f"{at}.of: {campaign['of']!r} is not another phase of this spec (its phases: {others or 'none'})")
        if source.get("campaign") is not None:
            raise SpecError(f"{at}.of: {campaign['of']!r} is a campaign itself; a campaign runs the systems "
                            "teams uploaded to a phase")
        if campaign.get("systems", "final") not in CAMPAIGN_SYSTEMS:
            raise SpecError(f"{at}.systems: {campaign['systems']!r} is not one of final (each team's board "
                            "submission), all (every system that finished)")
        if source.get("protocol") and not phase.get("protocol"):
            raise SpecError(f"{where}.phases[{i}].protocol: the systems of {campaign['of']!r} answer turn by turn; "
                            f"a campaign of them runs in the interactive protocol too (for example protocol: "
                            f"{source['protocol']!r})")
        if phase.get("allowed_kinds"):
            raise SpecError(f"{where}.phases[{i}].allowed_kinds: a campaign takes no uploads (its runs are "
                            "archived systems run again); leave allowed_kinds out")
    for i, dataset in enumerate(spec.get("datasets") or []):
        if isinstance(dataset, dict) and dataset.get("phase") is not None and str(dataset["phase"]) not in by_slug:
            raise SpecError(f"{where}.datasets[{i}].phase: no phase with slug {dataset['phase']!r} in this spec "
                            f"(it has {', '.join(by_slug) or 'none'})")


def _lengths_check(spec: Mapping[str, Any], where: str) -> None:
    """Text no longer than its column: SQLite would store it whole, PostgreSQL refuses it mid-load."""
    def check(item: Any, model: type[models.Model], keys: tuple[str, ...], at: str) -> None:
        if not isinstance(item, Mapping):
            return
        for key in keys:
            field = model._meta.get_field(key)
            limit = field.max_length if isinstance(field, models.Field) else None
            if item.get(key) is not None and limit and len(str(item[key])) > limit:
                raise SpecError(f"{at}.{key}: {len(str(item[key]))} characters, longer than the {limit} it may have")

    check(spec, Challenge, ("slug", "title"), where)
    for kind, model, keys in (("phases", Phase, ("slug", "name")), ("datasets", Dataset, ("slug", "name", "sealed_alias"))):
        items = spec.get(kind)
        for i, item in enumerate(items if isinstance(items, list) else []):
            check(item, model, keys, f"{where}.{kind}[{i}]")


def _unique(kind: str, items: list[tuple[int, dict[str, Any]]], where: str) -> None:
    slugs: dict[str, int] = {}
    # Uploads and result imports name a dataset by its slug or its name, in any case.
    names: dict[str, int] = {}
    for i, item in items:
        if item.get("slug") is None:
            continue  # the loader says it is missing
        slug = str(item["slug"])
        if slug in slugs:
            raise SpecError(f"{where}.{kind}[{i}]: slug {slug!r} is also {kind}[{slugs[slug]}]'s; two {kind} with "
                            "one slug would be merged into one, so give each its own")
        slugs[slug] = i
        if kind != "datasets":
            continue
        for name in {slug.casefold(), str(item.get("name", slug)).casefold()}:
            if names.setdefault(name, i) != i:
                raise SpecError(f"{where}.datasets[{i}]: {name!r} also names datasets[{names[name]}] (its name or "
                                "slug, in any case); uploads and result imports name datasets by either, so each "
                                "must be unique")


# --------------------------------------------------------------------------- dataset tags

TAG_NAME_MAX = 40
TAG_VALUE_MAX = 60
_TAG_EXAMPLE = "{question source: crowdsourced, passage source: Wikipedia}"


def dataset_tags_parse(raw: Any, *, where: str) -> dict[str, str]:
    """A dataset's ``tags`` as stored: tag name -> value, both non-empty text (absent: none).

    YAML reads an unquoted ``yes``/``no`` (and ``true``/``false``) as a boolean; such a value is
    kept as ``yes``/``no``, so ``passage-dependent questions: yes`` means what it says.  A whole
    number is kept as its digits.  Anything else (a list, a mapping, null) is refused: a tag
    groups datasets by one value.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: expected a mapping of tag to value, like {_TAG_EXAMPLE}, found {raw!r}")
    tags: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.strip():
            raise SpecError(f"{where}: a tag name must be text, like 'passage source', found {key!r}")
        name = key.strip()
        if len(name) > TAG_NAME_MAX:
            raise SpecError(f"{where}: tag name {name!r} has {len(name)} characters, more than the "
                            f"{TAG_NAME_MAX} it may have")
        if name.casefold() in seen:
            raise SpecError(f"{where}: tags {seen[name.casefold()]!r} and {name!r} differ only in case; "
                            "give the tag once")
        seen[name.casefold()] = name
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, str) and value.strip():
            text = value.strip()
        else:
            raise SpecError(f"{where}.{name}: expected a word or phrase, like Wikipedia or yes, found {value!r}")
        if len(text) > TAG_VALUE_MAX:
            raise SpecError(f"{where}.{name}: {len(text)} characters, more than the {TAG_VALUE_MAX} a tag "
                            "value may have")
        tags[name] = text
    return tags


def _tags_check(spec: Mapping[str, Any], where: str) -> None:
    """Each dataset's tags, and one spelling of each tag and value across datasets: boards average
    over the datasets sharing a (tag, value), so "Wikipedia" and "wikipedia" would be two groups of
    what the organizer meant as one."""
    names: dict[str, tuple[str, int]] = {}
    values: dict[tuple[str, str], tuple[str, int]] = {}
    items = spec.get("datasets")
    for i, dataset in enumerate(items if isinstance(items, list) else []):
        if not isinstance(dataset, Mapping):
            continue
        at = f"{where}.datasets[{i}].tags"
        for name, value in dataset_tags_parse(dataset.get("tags"), where=at).items():
            first, j = names.setdefault(name.casefold(), (name, i))
            if first != name:
                raise SpecError(f"{at}: tag {name!r} is spelt {first!r} in datasets[{j}]; spell it one way, "
                                "or the two would be averaged as separate tags")
            known, j = values.setdefault((name.casefold(), value.casefold()), (value, i))
            if known != value:
                raise SpecError(f"{at}.{name}: {value!r} is spelt {known!r} in datasets[{j}]; spell it one "
                                "way, or the two would be averaged as separate groups")


def _no_dev_portion(dataset: Mapping[str, Any], where: str) -> None:
    files = dataset.get("files")
    portions = dataset.get("portions")
    if (isinstance(files, dict) and FilePortion.DEV in files) or (
        isinstance(portions, list) and FilePortion.DEV in portions
    ):
        raise SpecError(
            f"{where}: a Split III dataset has no dev portion: it is entirely hidden, under its alias, "
            "until the reveal, and a dev portion would be scored and shown, and offered for download, like "
            "Split II's; give it a test portion only, or make it Split II"
        )


# --------------------------------------------------------------------------- MRQA headers

# Portion names MRQA-format files in the wild use for the portions (MRQA's own say "dev").
_SPLIT_NAMES = {"development": "dev", "validation": "dev", "valid": "dev", "val": "dev",
                "training": "train", "testing": "test"}


def _comparable(name: str) -> str:
    # "DuoRC.ParaphraseRC" is the header of the dataset with slug "duorc-paraphraserc".
    return re.sub(r"[^0-9a-z]+", "", name.casefold())


def mrqa_header_check(content: bytes, *, name: str, slug: str, portion: str, where: str) -> None:
    """Refuse an MRQA file whose header names another dataset or portion than the spec gives it.

    The header's ``dataset`` must be the dataset's name or slug (ignoring case and punctuation),
    and its ``split`` the portion, except that a "dev" file may be a test portion: official dev
    sets are the usual hidden test sets of a new task (MRQA's own out-of-domain files all say
    "dev").  A file without a header (some in the wild) is not checked.
    """
    header = mrqa_header(content)
    if header is None:
        return
    named = header.get("dataset")
    if isinstance(named, str) and named and _comparable(named) not in {_comparable(name), _comparable(slug)}:
        raise SpecError(
            f"{where}: the file's header names dataset {named!r}, but the spec gives it to {name!r} (slug "
            f"{slug!r}); if it is the right file, name the dataset {named!r} in the spec or correct the header"
        )
    split = header.get("split")
    if not isinstance(split, str) or not split:
        return
    said = _SPLIT_NAMES.get(split.casefold(), split.casefold())
    allowed = {portion, FilePortion.DEV.value} if portion == FilePortion.TEST else {portion}
    if said not in allowed:
        why = (" (a dev portion is downloaded by teams, with its answers)" if portion == FilePortion.DEV
               and said == FilePortion.TEST else "")
        raise SpecError(
            f"{where}: the file's header says split {split!r}, but the spec gives it as the {portion} "
            f"portion{why}; if it is the right file, correct the header's split to {portion!r}"
        )
