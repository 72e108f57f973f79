"""The spec's reference: what each key of ``SPEC_KEYS`` means and its default, as the organizers' page
shows it (docs/organizers/spec.md, written by ``docs/generate.py``; a test keeps the page current).

Every key of ``spec.SPEC_KEYS`` has a row here, or is named in its parent's row (``per_day`` in
``phases[].quota``'s): ``tests/leaderboard/test_spec_checks.py`` checks it. The limits' defaults and
the suites' options come from their dataclasses, so they are written only there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from leaderboard.challenges.budget_tracks import AXES
from leaderboard.challenges.spec import SPEC_KEYS, SUITE_OPTIONS, Keys
from leaderboard.sandbox.contract import Limits

# Key as shown (a key of each phase is ``phases[].quota``) -> (meaning, default), in Markdown.
KEY_DOCS: dict[str, tuple[str, str]] = {
    'slug': ("the challenge's address (`/c/<slug>/`) and what a reload matches on",
        'required'),
    'title': ('its name on pages',
        'the slug'),
    'description': ('shown on the challenge page',
        'empty'),
    'is_public': ("`false`: the challenge's pages and API answer 404 (the admin still shows it)",
        '`true`'),
    'max_team_size': ('most members a team may have (teams already larger keep theirs, but cannot grow)',
        'no limit'),
    'teams': ('how the challenge takes its teams',
        '`approval: off`'),
    'teams.approval': (("`required`: each new team waits for an organizer's **Approve…** in the console's Teams "
         'page before it may submit (its team page says so; teams made before stay approved); `off` '
         'releases the teams waiting'),
        '`off`'),
    'staff': (('usernames of its organizers (the accounts must exist): the organizer view, full failure '
         'reasons, alert e-mails'),
        'none'),
    'metric_suite': (('`mrqa` (EM/F1, macro F1 ranks), `mrc2018` (ROUGE-L, BLEU-4), `squad2`, `quac`, `coqa` (F1 '
         'ranks), `deepread` (HumSent ranks; AutSent, precision, recall)'),
        'required'),
    'suite_options': ("the suite's options, below",
        "the suite's defaults"),
    'ranking_rule': ("which submission is a team's row: `best`, `latest`, `selected` (by the team, else its latest)",
        '`best`'),
    'ranking': ('what the ranking average covers: `splits: [II, III]` or `datasets: [slug, ...]`',
        'every dataset of the phase'),
    'ranking.incomplete': ('a row that did not answer every ranked dataset: `zero` (counts 0 there) or `unranked`',
        '`zero`; required when a phase that takes prediction files ranks on Split III'),
    'sealed_aggregates': (('`all` (withhold every average over a sealed dataset; the public board ranks on the '
         'datasets it shows) or `isolating` (withhold only an average that gives a sealed score '
         'away; rows rank on the full average)'),
        '`all`'),
    'breakdowns': (("a submission's scores by slice of each dataset (question type, source, difficulty level, "
         'answerable or not, answer length, turn position), on its page and in the API'),
        '`min_questions: 50`'),
    'breakdowns.min_questions': (('on hidden data (test portions, Split III), teams see no family of slices (e.g. turn '
         'position) with a slice of fewer questions than this (a whole number, at least 1); '
         'organizers see every slice'),
        '50'),
    'systems': ('how submitted systems run',
        'below'),
    'systems.base_image': ('the image code bundles run on',
        '`readerboard/python:bookworm`'),
    'systems.runtime': ('`runc` or `runsc` (gVisor)',
        "the compute worker's `READERBOARD_CONTAINER_RUNTIME`"),
    'systems.queue': (('the queue its runs go to: `cpu`, `gpu` or a name of your own (lower-case letters, digits, '
         '`-`, `_`; not `celery` or `control`); a compute worker started with `-Q <name>` runs them'),
        '`cpu`'),
    'systems.gpus': ('GPUs each run gets (`docker run --gpus N`; the host needs the NVIDIA container toolkit)',
        '0'),
    'systems.max_running_per_team': ('how many systems of one team run at once; the others wait',
        '2'),
    'systems.platform_failures_per_day': (("how many of one team's runs on hidden data the platform may fail (not counted) in 24 hours"
         " before its next hidden runs are held for an organizer's review (the console's queue page "
         'releases them)'),
        '3'),
    'systems.storage_mb_per_team': ('MiB of uploads each team may keep',
        '4096'),
    'campaigns': ('evaluation campaigns on archived systems (see [Evaluation campaigns](campaigns.md))',
        'below'),
    'campaigns.consent': (('whose systems a campaign may run again: `opt_out` (every system unless its team '
         'opted out on its team page), `opt_in` (only teams that opted in), `required` (the terms allow no '
         'opting out)'),
        '`opt_out`'),
    'phases': ('a list; each phase:',
        'required'),
    'phases[].slug': ("the phase's address (`/c/<slug>/board/<phase>/`)",
        'required'),
    'phases[].name': ('its name on pages',
        'the slug'),
    'phases[].kind': ('`dev` or `test`',
        'required'),
    'phases[].portion': ('which gold portion it scores: `dev` or `test`',
        'the kind'),
    'phases[].opens_at': ('when it opens, in UTC with a `Z`: `2019-07-29T00:00:00Z`',
        'required'),
    'phases[].closes_at': ('when it closes (an upload started before it is in time)',
        'required'),
    'phases[].quota': ('`per_day` (rolling 24 h), `total`, `concurrent` submissions per team',
        'unlimited'),
    'phases[].allowed_kinds': ('`predictions`, `docker_image`, `code_bundle`; `[]` for a board of imported results',
        '`[predictions]`'),
    'phases[].protocol': (('run systems in the interactive protocol, in these modes (the first ranks, and cannot be '
         '`adversarial`): QuAC and CoQA challenges `gold`, `own`, `adversarial`, `single`; MRQA '
         "challenges `[single]` (one question per request, as MRQA 2019's prediction server); see "
         '[Answering turn by turn](../participants/interactive.md); the phase takes systems only'),
        'batch (every question at once)'),
    'phases[].board_public': ('`false`: the board is for organizers only',
        '`true`'),
    'phases[].budget_tracks': (('boards by measured cost (a list; each track: a `name` and limits on some of the axes '
         'below). Every system of the phase is on every track: within its limits it is ranked, over one it '
         'is listed as over budget with the figure; an upload that names a track (`track`) is refused when '
         'its size is over that track\'s `image_mib`. Example: `[{name: 6 GiB, image_mib: 6144}, '
         '{name: 500 MB, image_mib: 500, peak_memory_mib: 4096}]`. See [Budget tracks](budgets.md)'),
        'none'),
    'phases[].budget_tracks.name': ("the track's name on its board (up to 40 characters; one per phase)",
        'required'),
    'phases[].campaign': (('an evaluation campaign: archived systems of another phase run again on this phase\'s own '
         'datasets (those whose `phase` names it), same image or bundle, under the same sealing rules; its board is '
         'separate and the original boards do not change; it takes no uploads; an organizer starts it in the '
         'console or with `manage.py campaign_run`. See [Evaluation campaigns](campaigns.md)'),
        'none: a phase of uploads'),
    'phases[].campaign.of': ('the slug of the phase whose systems it runs again (not a campaign)',
        'required'),
    'phases[].campaign.systems': (("`final` (each team's board submission there) or `all` (every system that "
         'finished there)'),
        '`final`'),
    'phases[].campaign.limits': (("limits changed for the campaign's runs, any of `systems.limits`' keys ("
         + ", ".join(f"`{f.name}`" for f in dataclasses.fields(Limits)) + "); each change is recorded beside the run"),
        "the challenge's `systems.limits`"),
    'datasets': ('a list; each dataset:',
        'required'),
    'datasets[].slug': ('its key in uploads, exports and the API (not shown while sealed)',
        'required'),
    'datasets[].name': ('its column on boards; uploads may name it so too',
        'the slug'),
    'datasets[].split': (("MRQA's: `I` (training domains), `II` (public dev, hidden test), `III` (entirely hidden, "
         'sealed)'),
        'required'),
    'datasets[].description': ('shown on the challenge page (to organizers only while sealed)',
        'empty'),
    'datasets[].tags': (("the organizer's categories, tag name -> value (text; an unquoted `yes`/`no` stays "
         '`yes`/`no`), as in Table 4 of the MRQA 2019 overview: `{question source: crowdsourced, '
         'passage source: Wikipedia, passage-dependent questions: yes}`; boards average the ranking '
         'metric over the datasets sharing a value ("Averages by tag", and the paper tables); one '
         "spelling per tag and value across datasets; a sealed dataset's tags are for organizers "
         'only until the reveal'),
        'none'),
    'datasets[].sealed_alias': ('Split III: the name shown until the reveal',
        '`Hidden-` and six characters of an HMAC of the slug'),
    'datasets[].revealed': ('`true`: reveal it (Split III) at this load; a reveal is not undone',
        '`false`'),
    'datasets[].portions': ('portions without gold files here, e.g. for imported results: `[test]`',
        'those of `files`'),
    'phases[].human_eval': (("the settings of the phase's human evaluation round, from which an organizer creates it "
         '(console, or `manage.py judging_round_create`): its systems are the board\'s top ones. '
         'See [Human evaluation](human-evaluation.md)'),
        'none'),
    'phases[].human_eval.name': ("the round's name", 'the phase\'s name'),
    'phases[].human_eval.top': ("how many of the board's systems are judged (its top k, by the board's ranking)", '5'),
    'phases[].human_eval.questions': ('how many questions are sampled (seeded)', '500'),
    'phases[].human_eval.seed': ('the sample\'s seed, so it can be drawn again', 'a random one, recorded'),
    'phases[].human_eval.stratify_by': (('`question_type` (suites with typed questions: `mrc2018`), `dataset`, or '
         '`none`'), '`none`'),
    'phases[].human_eval.judges_per_item': ('how many judges score each answer', '2'),
    'phases[].human_eval.scale': (('`five_point` (1-5, Yang et al.\'s guideline) or `correct_partly_wrong` (with an '
         '"acceptable answer" flag)'), '`five_point` for `mrc2018`, `correct_partly_wrong` for `mrqa`'),
    'phases[].human_eval.guideline': ('the guideline judges read', "the scale's default (the paper's for 1-5)"),
    'phases[].human_eval.deadline': ('when judging closes, in UTC with a `Z`', 'none'),
    'phases[].human_eval.disagreement_margin': (('judges differing by more than this go to adjudication by an '
         'organizer'), '1 on the 1-5 scale, 0 on correct/partly/wrong'),
    'phases[].human_eval.judges': ('usernames invited as judges when the round is created', 'none'),
    'phases[].campaign.runtime': (("the runtime its runs use instead of the challenge's `systems.runtime`: `runc` or "
         '`runsc`; recorded beside each run'),
        "the challenge's"),
    'datasets[].phase': (("the one phase the dataset belongs to, by slug (a campaign's new data); no other "
         'phase shows, runs or offers it'),
        'every phase with its portion'),
    'datasets[].files': (('gold files by portion, paths relative to the spec: `dev`, `test`, and `train` (Split I '
         'only: a download, never scored)'),
        'none'),
}
# A track's limits: one row per axis, in the words of the axis itself (challenges.budget_tracks.AXES).
KEY_DOCS.update({f"phases[].budget_tracks.{axis.key}": (f"a limit (at most) on {axis.meaning}", "no limit") for axis in AXES})
# Rows whose key is a list of mappings (phases, datasets): shown as ``phases[].slug``.
LISTS = ("phases", "datasets")
# What a limit is for, where its name does not say it.
LIMIT_NOTES = {"turn_limit_s": "the interactive protocol's time per request"}


def dotted_keys(keys: Keys = SPEC_KEYS, prefix: str = "") -> Iterator[str]:
    """Every key of the spec, parents before their children, in the key table's order."""
    for key, nested in keys.items():
        yield prefix + key
        if nested is not None:
            yield from dotted_keys(nested, f"{prefix}{key}.")


def shown_key(dotted: str) -> str:
    head, _, rest = dotted.partition(".")
    return f"{head}[].{rest}" if head in LISTS and rest else dotted


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def limits_row() -> tuple[str, str]:
    parts = []
    for field in dataclasses.fields(Limits):
        note = f" ({LIMIT_NOTES[field.name]})" if field.name in LIMIT_NOTES else ""
        parts.append(f"`{field.name}` {_value(field.default)}{note}")
    return ", ".join(parts), "as listed"


def key_rows() -> list[tuple[str, str, str]]:
    """(shown key, meaning, default) for every documented key, in the key table's order."""
    docs = {**KEY_DOCS, "systems.limits": limits_row()}
    return [(shown, *docs[shown]) for shown in map(shown_key, dotted_keys()) if shown in docs]


def option_rows() -> list[tuple[str, str, str, str]]:
    """(suite, option, meaning, default) of every suite's options dataclass."""
    rows = []
    for suite, kind in SUITE_OPTIONS.items():
        for field in dataclasses.fields(kind):
            meaning = field.metadata["meaning"]
            if field.metadata.get("bounds"):
                low, high = field.metadata["bounds"]
                meaning += f" (at least {low:g})" if high == float("inf") else f" ({low:g} to {high:g})"
            default = f"`{_value(field.default)}`" if isinstance(field.default, (bool, str)) else _value(field.default)
            rows.append((suite, field.name, meaning, default))
    return rows


def spec_reference_markdown() -> str:
    """The two tables of the organizers' spec page."""
    lines = ["| key | meaning | default |", "|---|---|---|"]
    lines += [f"| `{key}` | {meaning} | {default} |" for key, meaning, default in key_rows()]
    plain = [suite for suite, kind in SUITE_OPTIONS.items() if not dataclasses.fields(kind)]
    lines += ["", f"Suite options (`suite_options: {{...}}`); {', '.join(f'`{s}`' for s in plain)} take none:", "",
              "| suite | option | meaning | default |", "|---|---|---|---|"]
    lines += [f"| `{suite}` | `{option}` | {meaning} | {default} |" for suite, option, meaning, default in option_rows()]
    return "\n".join(lines) + "\n"
