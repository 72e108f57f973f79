"""A challenge's starting kit: one zip generated from the challenge itself, byte for byte reproducible.

Inside ``<slug>-starting-kit/`` (its README.md says how to use each part):

* ``README.md``: the system contract with this challenge's limits (``SystemSettings``), and the
  exact commands that reproduce the dev scores from the files of the Data page;
* ``sample/input/``: a ``manifest.json`` as a dev run writes it and one input file, the stored
  answer-free inputs of the smallest public dev dataset (what a system reads on the platform);
* ``system/run.py`` and ``baseline-bundle.zip``: the platform's baseline, readable and as a code
  bundle (``run.py`` at its top) that can be submitted as is;
* ``dev/manifest.json``: a manifest over the downloaded dev files, so the baseline (or any system
  following the contract) runs on them locally;
* ``readerboard_scoring-<version>-py3-none-any.whl`` and ``requirements.txt``: the platform's scoring
  library as a wheel (:func:`scoring_wheel`), installed with its pinned dependencies by one
  ``pip install -r requirements.txt``, for ``python -m scoring``; plus, for mrc2018, quac
  and coqa, ``tools/<suite>_predictions.py`` (the platform's own conversion of ``{qid: answer}`` to
  the official scorer's format).

Determinism: fixed timestamps and modes, sorted members, no build date.  The zip depends only on
the challenge's public dev data, settings and the sources it copies, so it is cached on private
storage under a key over exactly those; new dev data, limits or a new baseline build a new kit.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import tomllib
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.utils.text import slugify

import scoring
from leaderboard.challenges.downloads import (
    DataKind,
    data_catalogue,
    dev_downloads,
    download_name,
    file_fingerprint,
)
from leaderboard.challenges.models import SYSTEM_KINDS, Challenge, PhaseKind, SubmissionKind
from leaderboard.challenges.selectors import dataset_run_key, modes_text, phase_averages_covered
from leaderboard.challenges.spec import suite_options_of
from leaderboard.challenges.suites import suite_for
from leaderboard.challenges.suites.base import SuiteOptions, options_as
from leaderboard.challenges.suites.mrc2018 import Mrc2018Options
from leaderboard.challenges.suites.mrqa import MrqaOptions
from leaderboard.challenges.suites.quac import QuacOptions
from leaderboard.sandbox.contract import BUNDLE_DECLARATION, Limits, SystemSettings, limits_stated
from scoring.dialogs import DIALOG_FORMATS, Mode

# Bump when the kit's layout changes without any of its inputs changing.
KIT_FORMAT = 4
BASELINE = Path(settings.BASE_DIR) / "deploy" / "images" / "baseline" / "baseline.py"
# The conversational baseline, for challenges whose phases answer turn by turn.
CONVERSE_BASELINE = BASELINE.parent / "converse_baseline.py"
# Dialogs to try the turn-by-turn protocol on (written for it: no challenge's data), per format.
PRACTICE_DIALOGS = {fmt: BASELINE.parent / "practice" / f"{fmt}-practice.json" for fmt in DIALOG_FORMATS}
# The platform's base image for code bundles, built from this very file on a participant's machine.
BASE_DOCKERFILE = Path(settings.BASE_DIR) / "deploy" / "images" / "base" / "Dockerfile"
# The platform's rule for answers (leaderboard.sandbox.answers_json, standard library only): the kit
# carries it next to scoring/, where `python -m scoring converse` applies it as the platform does.
ANSWERS_RULE = Path(settings.BASE_DIR) / "leaderboard" / "sandbox" / "answers_json.py"
README_TEMPLATE = Path(settings.BASE_DIR) / "leaderboard" / "core" / "templates" / "challenges" / "starting_kit_README.md"
SCORING_DIR = Path(scoring.__file__).resolve().parent
# The scoring library's distribution (name, dependencies, command), which the kit carries as a wheel.
SCORING_PROJECT = Path(settings.BASE_DIR) / "deploy" / "packages" / "scoring" / "pyproject.toml"
# As the run plan names them (submissions.selectors.system_run_plan): the manifest's "format".
INPUT_FORMATS = {"mrqa": "mrqa", "mrc2018": "dureader", "squad2": "squad2", "quac": "quac", "coqa": "coqa",
                 "deepread": "deepread"}
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
# An older kit stays this long after a new one is built: a request that chose it may still open it.
STALE_KIT_S = 600
MRC2018_CONVERTER = '''#!/usr/bin/env python3
"""{question_id: answer} (what a system writes) -> the JSON lines `python -m scoring mrc2018` reads.

The same conversion the platform applies before scoring: each answer becomes {"answers": [answer]}
and each id takes the type the reference file gives it (DuReader ids are numbers).
Usage: python tools/mrc2018_predictions.py PRED.json REF.jsonl > PRED.jsonl
"""
import json
import sys

predictions = json.load(open(sys.argv[1], encoding="utf-8"))
ids = {}
with open(sys.argv[2], encoding="utf-8") as fh:
    for line in fh:
        if line.strip():
            qid = json.loads(line)["question_id"]
            ids[str(qid)] = qid
for key, answer in predictions.items():
    record = {"answers": [answer]} if isinstance(answer, str) else dict(answer)
    record["question_id"] = ids.get(key, key)
    print(json.dumps(record, ensure_ascii=False))
'''
QUAC_CONVERTER = '''#!/usr/bin/env python3
"""{qid: answer} (what a system writes) -> the JSON lines `python -m scoring quac` reads (scorer.py's).

The same filing the platform does before scoring: one line per dialog of the dataset, its questions
in order; an answer is a string, or {"answer", "yesno", "followup"}; yesno and followup default to
"x" and "m" (no opinion), as on the platform.  A question without an answer is left out (scored 0).
Usage: python tools/quac_predictions.py PRED.json DATASET.json > PRED.jsonl
"""
import json
import sys

predictions = json.load(open(sys.argv[1], encoding="utf-8"))
dataset = json.load(open(sys.argv[2], encoding="utf-8"))
for article in dataset["data"]:
    for paragraph in article["paragraphs"]:
        line = {"qid": [], "best_span_str": [], "yesno": [], "followup": []}
        for qa in paragraph["qas"]:
            if qa["id"] not in predictions:
                continue
            answer = predictions[qa["id"]]
            answer = answer if isinstance(answer, dict) else {"answer": answer}
            line["qid"].append(qa["id"])
            line["best_span_str"].append(answer["answer"])
            line["yesno"].append(answer.get("yesno", "x"))
            line["followup"].append(answer.get("followup", "m"))
        if line["qid"]:
            print(json.dumps(line, ensure_ascii=False))
'''
COQA_CONVERTER = '''#!/usr/bin/env python3
"""{"<story id>_<turn>": answer} (what a system writes) -> the list `python -m scoring coqa` reads.

The platform keys a CoQA turn by its story's id and its turn number; the official format is a list of
{"id", "turn_id", "answer"}.  Usage: python tools/coqa_predictions.py PRED.json > PRED.coqa.json
"""
import json
import sys

predictions = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for key, answer in predictions.items():
    story, _, turn = key.rpartition("_")
    out.append({"id": story, "turn_id": int(turn), "answer": answer})
json.dump(out, sys.stdout, ensure_ascii=False)
'''
CONVERTERS = {"mrc2018": ("tools/mrc2018_predictions.py", MRC2018_CONVERTER),
              "quac": ("tools/quac_predictions.py", QUAC_CONVERTER),
              "coqa": ("tools/coqa_predictions.py", COQA_CONVERTER)}


@dataclass(frozen=True)
class BuiltKit:
    path: Path
    filename: str
    size_bytes: int
    sha256: str
    summary: str = ""  # what it holds, in a few words (the Data page's row)
    description: str = ""  # what it holds, in a sentence (the Data page's paragraph)


@dataclass(frozen=True)
class KitDevFile:
    slug: str
    label: str
    filename: str  # as downloaded from the Data page
    sha256: str
    output: str  # what the system writes for it: <dataset slug>.json, a valid upload member name
    score_lines: tuple[str, ...]


@dataclass(frozen=True)
class KitPlan:
    """Everything the kit's bytes depend on."""

    slug: str
    title: str
    suite: str
    input_format: str
    suffix: str
    suite_options: SuiteOptions
    system: SystemSettings
    dev_phase: str
    dev_files: tuple[KitDevFile, ...]
    sample_label: str
    sample_name: str
    sample_path: str
    sample_sha256: str
    # Phases whose systems answer turn by turn: (name, the labels of its modes).
    interactive: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Phases by what they take: (slug, name) of those taking prediction files, batch systems.
    prediction_phases: tuple[tuple[str, str], ...] = ()
    batch_phases: tuple[tuple[str, str], ...] = ()
    # The slug of the first interactive phase and its modes (as the platform names them), in order.
    interactive_slug: str = ""
    interactive_modes: tuple[str, ...] = ()
    # A test phase taking prediction files: its slug, and the test inputs of the Data page.
    test_phase: str = ""
    test_files: tuple[KitDevFile, ...] = ()
    # What each average of the dev board covers, in the board's words (``phase_averages_covered``).
    dev_averages: tuple[str, ...] = ()

    @property
    def takes_files(self) -> bool:
        """Whether a phase takes prediction files or batch systems (what system/run.py writes)."""
        return bool(self.prediction_phases or self.batch_phases)

    def cache_key(self) -> str:
        fields = {k: v for k, v in self.__dict__.items() if k not in {"system", "sample_path"}}
        fields["suite_options"] = dataclasses.asdict(self.suite_options)
        fields["system"] = self.system.as_json()
        fields["dev_files"] = [f.__dict__ for f in self.dev_files]
        fields["test_files"] = [f.__dict__ for f in self.test_files]
        blob = json.dumps([KIT_FORMAT, fields, _sources_digest()], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def manifest(self, datasets: list[dict[str, str]], *, test: bool = False) -> dict[str, Any]:
        """A manifest as a dev (or ``test``) run on the platform writes it (RunPlan.manifest)."""
        return {
            "challenge": self.slug,
            "phase": self.test_phase if test else self.dev_phase,
            "portion": "test" if test else "dev",
            "datasets": datasets,
            "limits": self.system.as_json()["limits"],
        }


@cache
def _sources_digest() -> str:
    # The files copied into the kit, and this builder: a new version of any builds a new kit.
    digest = hashlib.sha256()
    for path in [BASELINE, CONVERSE_BASELINE, README_TEMPLATE, Path(__file__), BASE_DOCKERFILE, ANSWERS_RULE,
                 *sorted(PRACTICE_DIALOGS.values()), *sorted(SCORING_DIR.glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _score_lines(suite: str, options: SuiteOptions, gold: str, output: str) -> tuple[str, ...]:
    """The command lines that score one dev dataset exactly as the platform does (the suite's ``score``)."""
    if suite == "mrqa":
        # MrqaSuite.score's tokenization option (CMRC 2018's EM/F1 for Chinese answers).
        flags = " --tokenization cjk" if options_as(options, MrqaOptions).tokenization == "cjk" else ""
        return (f"python -m scoring mrqa {gold} {output}{flags}",)
    if suite == "mrc2018":
        own = options_as(options, Mrc2018Options)
        lines = output.removesuffix(".json") + ".jsonl"
        flags = f"--alpha {float(own.alpha)!r} --beta {float(own.beta)!r}"
        if own.lic2019_guards:
            flags += " --lic2019-guards"
        return (
            f"python tools/mrc2018_predictions.py {output} {gold} > {lines}",
            f"python -m scoring mrc2018 {lines} {gold} {flags}",
        )
    if suite == "squad2":
        return (f"python -m scoring squad2 {gold} {output}",)
    if suite == "quac":
        lines = output.removesuffix(".json") + ".jsonl"
        min_f1 = float(options_as(options, QuacOptions).min_f1)
        return (
            f"python tools/quac_predictions.py {output} {gold} > {lines}",
            f"python -m scoring quac --val_file {gold} --model_output {lines} --min_f1 {min_f1!r}",
        )
    if suite == "coqa":
        official = output.removesuffix(".json") + ".coqa.json"
        return (
            f"python tools/coqa_predictions.py {output} > {official}",
            f"python -m scoring coqa --data-file {gold} --pred-file {official}",
        )
    if suite == "deepread":
        # DeepReadSuite.score: an answer that is a sentence of its story picks that sentence.
        return (f"python -m scoring deepread {gold} {output} --sentence-answers",)
    return ()


def kit_plan(*, challenge: Challenge) -> KitPlan:
    suite = suite_for(challenge)
    options = suite_options_of(challenge)
    phases = list(challenge.phases.all())
    dev = next((p for p in phases if p.portion == PhaseKind.DEV), None)
    dev_phase = dev.slug if dev else "dev"
    dev_files = []
    sample: tuple[int, int, str, str, str, str] | None = None
    for order, (record, filename) in enumerate(dev_downloads(challenge=challenge)):
        ds = record.dataset
        # As a run on the platform names it (and an upload may name its member so).
        output = f"{dataset_run_key(ds)}.json"
        lines = _score_lines(suite.key, options, f"dev/{filename}", f"out/{output}")
        dev_files.append(KitDevFile(ds.slug, ds.name, filename, record.sha256, output, lines))
        fingerprint = file_fingerprint(record.inputs.path) if record.inputs else None
        if fingerprint is not None:
            # The smallest public dev inputs keep the kit small; page order breaks ties.
            candidate = (fingerprint[0], order, ds.name, slugify(ds.name) or ds.slug, record.inputs.path, fingerprint[1])
            sample = min(sample, candidate) if sample else candidate
    def takes(phase: Any, kinds: Any) -> bool:
        return any(k in kinds for k in phase.allowed_kinds)

    prediction_phases = tuple((p.slug, p.name) for p in phases if takes(p, (SubmissionKind.PREDICTIONS,)))
    batch_phases = tuple((p.slug, p.name) for p in phases if not p.protocol_modes and takes(p, SYSTEM_KINDS))
    if not (prediction_phases or batch_phases):
        sample = None  # what /input holds for a batch run: nothing a turn-by-turn system reads
    first_interactive = next((p for p in phases if p.protocol_modes), None)
    test_phase = next((p.slug for p in phases if p.portion == PhaseKind.TEST
                       and takes(p, (SubmissionKind.PREDICTIONS,))), "")
    test_files = []
    if test_phase:
        suffix = suite.gold_suffix
        for offer in data_catalogue(challenge).offers.values():
            fingerprint = file_fingerprint(offer.record.inputs.path) if offer.record.inputs else None
            if offer.kind is DataKind.TEST_INPUTS and fingerprint is not None:
                ds = offer.record.dataset
                test_files.append(KitDevFile(ds.slug, ds.name, download_name(challenge, offer, suffix),
                                             fingerprint[1], f"{dataset_run_key(ds)}.json", ()))
    return KitPlan(
        slug=challenge.slug,
        title=challenge.title,
        suite=suite.key,
        input_format=INPUT_FORMATS.get(suite.key, suite.key),
        suffix=suite.gold_suffix,
        suite_options=options,
        system=SystemSettings.from_json(challenge.system_settings),
        dev_phase=dev_phase,
        dev_files=tuple(dev_files),
        sample_label=sample[2] if sample else "",
        sample_name=(sample[3] + suite.gold_suffix) if sample else "",
        sample_path=sample[4] if sample else "",
        sample_sha256=sample[5] if sample else "",
        interactive=tuple((p.name, tuple(Mode(m).label for m in p.protocol_modes)) for p in phases if p.protocol_modes),
        prediction_phases=prediction_phases,
        batch_phases=batch_phases,
        interactive_slug=first_interactive.slug if first_interactive else "",
        interactive_modes=tuple(first_interactive.protocol_modes) if first_interactive else (),
        test_phase=test_phase,
        test_files=tuple(test_files),
        dev_averages=tuple(phase_averages_covered(phase=dev)) if dev else (),
    )


def kit_summary(plan: KitPlan) -> tuple[str, str]:
    """What this kit holds, as the Data page says it: a few words, and a sentence (HTML-free)."""
    parts, words = ["the contract with this challenge's limits"], ["contract and limits"]
    if plan.takes_files:
        parts.append("the baseline system and a manifest over the dev files"
                     + (", a sample input" if plan.sample_name else ""))
        words.append("baseline system")
    if plan.batch_phases:
        parts.append("the baseline as a code bundle for " + ", ".join(name for _, name in plan.batch_phases))
        words.append("batch bundle")
    if plan.interactive:
        parts.append("the conversational baseline as an interactive bundle for "
                     + ", ".join(name for name, _ in plan.interactive)
                     + ", practice dialogs and the turn-by-turn harness (python -m scoring converse)")
        words.append("interactive bundle, turn-by-turn harness")
    if plan.test_files:
        parts.append(f"the steps and manifest for the {plan.test_phase} phase's prediction files")
        words.append("test phase steps")
    if plan.batch_phases or plan.interactive:
        parts.append("the base image's Dockerfile and the docker run line of the platform")
        words.append("Dockerfile")
    parts.append("the scoring library"
                 + (" and the exact python -m scoring commands that reproduce the dev scores" if plan.dev_files else ""))
    words.append("local scoring")
    return ", ".join(words), "One zip built from this challenge: " + "; ".join(parts) + "."


def _info(name: str, *, executable: bool = False) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, so the modes below hold
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    return info


def _json(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def baseline_bundle_bytes() -> bytes:
    """The baseline as a code bundle: a zip with run.py at its top (docs/participants/systems.md)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr(_info("run.py", executable=True), BASELINE.read_bytes())
    return buffer.getvalue()


def converse_bundle_bytes() -> bytes:
    """The conversational baseline as an interactive code bundle: ``run.py`` and the declaration
    (``readerboard.json``) that an interactive phase asks of a bundle at upload."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr(_info("run.py", executable=True), CONVERSE_BASELINE.read_bytes())
        bundle.writestr(_info(BUNDLE_DECLARATION), _json({"protocol": "interactive"}))
    return buffer.getvalue()


def docker_run_args(limits: Limits, *, base_image: str, interactive: bool = False) -> list[str]:
    """``docker run`` of a code bundle unpacked in ``system/bundle``, as the platform's runner creates
    its container (workers.runner: the same mounts, user, limits and environment; a test holds
    the two to each other): ``dev`` as ``/input``, ``out`` as ``/output``."""
    memory = f"{limits.memory_mb}m"
    env = {"READERBOARD_INPUT": "/input", "READERBOARD_OUTPUT": "/output", "HOME": "/tmp", **limits.as_env()}
    if interactive:
        # READERBOARD_MODE without a value: docker passes on the harness's, set per mode.
        env["READERBOARD_PROTOCOL"] = "interactive"
    args = ["docker", "run", "--rm", *(["-i"] if interactive else []), "--network", "none", "--read-only",
            "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={limits.tmp_mb}m,mode=1777", "--shm-size", f"{limits.shm_mb}m",
            "--memory", memory, "--memory-swap", memory, "--cpus", f"{limits.cpus:g}",
            "--pids-limit", str(limits.pids), "--ulimit", f"nofile={limits.nofile}:{limits.nofile}",
            "--ulimit", "core=0:0", "-v", "$PWD/dev:/input:ro", "-v", "$PWD/out:/output:rw",
            "-v", "$PWD/system/bundle:/system:ro", "-w", "/system"]
    for key, value in env.items():
        args += ["-e", f"{key}={value}"]
    if interactive:
        args += ["-e", "READERBOARD_MODE"]
    return [*args, base_image, "python3", "/system/run.py"]


def readme_text(plan: KitPlan) -> str:
    sample_manifest = plan.manifest(_sample_datasets(plan)) if plan.sample_name else None
    return render_to_string("challenges/starting_kit_README.md", {
        "plan": plan,
        "limits": plan.system.limits,
        # The limits that bind the protocols this kit's phases run (the challenge page says the same).
        "limits_terms": ", ".join(limits_stated(plan.system.limits, batch=plan.takes_files or not plan.interactive,
                                                interactive=bool(plan.interactive))),
        "interactive_modes": [(name, modes_text(labels)) for name, labels in plan.interactive],
        "sample_manifest": json.dumps(sample_manifest, indent=2) if sample_manifest else "",
        "scoring_wheel": scoring_wheel()[0],
        "docker_run": " ".join(docker_run_args(plan.system.limits, base_image=plan.system.base_image)),
        "docker_converse": " ".join(docker_run_args(plan.system.limits, base_image=plan.system.base_image,
                                                    interactive=True)),
        "dev_takes_predictions": any(slug == plan.dev_phase for slug, _ in plan.prediction_phases),
        "practice": f"dev/{plan.suite}-practice.json" if plan.suite in PRACTICE_DIALOGS else "",
        "harness_modes": " ".join(f"--mode {m}" for m in plan.interactive_modes),
        "test_manifest": json.dumps(_test_manifest(plan), indent=2) if plan.test_files else "",
    })


def _test_manifest(plan: KitPlan) -> dict[str, Any]:
    return plan.manifest([{"name": f.label, "input": f.filename, "output": f.output, "format": plan.input_format}
                          for f in plan.test_files], test=True)


def _sample_datasets(plan: KitPlan) -> list[dict[str, str]]:
    key = plan.sample_name.removesuffix(plan.suffix)
    return [{"name": plan.sample_label, "input": plan.sample_name, "output": f"{key}.json",
             "format": plan.input_format}]


def _write_kit(plan: KitPlan, target: Path) -> None:
    root = f"{plan.slug}-starting-kit/"
    members: list[tuple[str, bytes | Path, bool]] = [
        ("README.md", readme_text(plan).encode("utf-8"), False),
        ("requirements.txt", _requirements(), False),
    ]
    if plan.batch_phases or plan.interactive:
        members.append(("docker/Dockerfile", BASE_DOCKERFILE, False))
    if plan.takes_files:
        members.append(("system/run.py", BASELINE, True))
        members.append(("dev/manifest.json", _json(plan.manifest([
            {"name": f.label, "input": f.filename, "output": f.output, "format": plan.input_format}
            for f in plan.dev_files
        ])), False))
    if plan.sample_name:
        members.append(("sample/input/manifest.json", _json(plan.manifest(_sample_datasets(plan))), False))
        members.append((f"sample/input/{plan.sample_name}", Path(plan.sample_path), False))
    if plan.batch_phases:
        members.append(("baseline-bundle.zip", baseline_bundle_bytes(), False))
    if plan.test_files:
        members.append(("test/manifest.json", _json(_test_manifest(plan)), False))
    if plan.interactive:
        members.append(("system/converse.py", CONVERSE_BASELINE, True))
        members.append(("converse-bundle.zip", converse_bundle_bytes(), False))
        members.append(("answers_json.py", ANSWERS_RULE, False))
    if plan.suite in PRACTICE_DIALOGS:
        members.append((f"dev/{plan.suite}-practice.json", PRACTICE_DIALOGS[plan.suite], False))
    if plan.suite in CONVERTERS and plan.takes_files:
        name, converter = CONVERTERS[plan.suite]
        members.append((name, converter.encode("utf-8"), True))
    wheel_name, wheel = scoring_wheel()
    members.append((wheel_name, wheel, False))
    with zipfile.ZipFile(target, "w") as kit:
        for name, content, executable in sorted(members, key=lambda m: m[0]):
            info = _info(root + name, executable=executable)
            if isinstance(content, bytes):
                kit.writestr(info, content)
            else:
                # Streamed: an input file can be large.
                with open(content, "rb") as src, kit.open(info, "w") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)


def _requirements() -> bytes:
    # The scoring library's wheel (in this folder), and what it needs at the platform's own pins (nltk
    # too: cmrc2018 and mrqa --tokenization cjk), so that local numbers match the board's.
    pins = [line for line in (Path(settings.BASE_DIR) / "requirements.txt").read_text().splitlines()
            if line.split("==")[0].strip() in {"numpy", "rapidfuzz", "nltk"}]
    header = "# python -m pip install -r requirements.txt: the scoring library, at the platform's versions\n"
    return (header + f"./{scoring_wheel()[0]}\n" + "\n".join(pins) + "\n").encode("utf-8")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")


@cache  # the same bytes for the process's life (its sources do not change under it): built once, not per use
def scoring_wheel() -> tuple[str, bytes]:
    """The scoring library as a wheel, built here from its own distribution's metadata
    (``deploy/packages/scoring/pyproject.toml``) and the platform's ``scoring/`` files: the kit installs
    the very code that scores the board, with no build tool on the platform's hosts.  The files and
    metadata equal what ``pip wheel`` builds from that project (``tests/test_packages.py``)."""
    project = tomllib.loads(SCORING_PROJECT.read_text(encoding="utf-8"))["project"]
    name, version = project["name"], scoring.__version__
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", f"Summary: {project['description']}",
                f"Requires-Python: {project['requires-python']}"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in project["dependencies"]]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        metadata.append(f"Provides-Extra: {extra}")
        metadata += [f"Requires-Dist: {requirement}; extra == '{extra}'" for requirement in requirements]
    scripts = "".join(f"{command} = {target}\n" for command, target in project.get("scripts", {}).items())
    files = [(f"scoring/{p.name}", p.read_bytes()) for p in sorted(SCORING_DIR.iterdir())
             if p.is_file() and (p.suffix == ".py" or p.name == "py.typed")]
    files += [(f"{info}/METADATA", ("\n".join(metadata) + "\n").encode("utf-8")),
              (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: readerboard starting kit\nRoot-Is-Purelib: true\n"
                                b"Tag: py3-none-any\n"),
              (f"{info}/entry_points.txt", f"[console_scripts]\n{scripts}".encode())]
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files) + f"{info}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for path, data in [*files, (f"{info}/RECORD", record.encode("utf-8"))]:
            wheel.writestr(_info(path), data)
    return f"{stem}-py3-none-any.whl", buffer.getvalue()


def _prune(cache_dir: Path, *, keep: Path) -> None:
    """Remove kits of older versions of the challenge, once no download can still be starting on them."""
    cutoff = time.time() - STALE_KIT_S
    for old in cache_dir.glob("*.zip"):
        try:
            if old != keep and old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            pass  # another process pruned it first


def starting_kit_build(*, challenge: Challenge) -> BuiltKit:
    """The challenge's kit, built on first use and then served from the cache on private storage."""
    plan = kit_plan(challenge=challenge)
    cache_dir = Path(settings.PRIVATE_STORAGE_ROOT) / "kits" / challenge.slug
    path = cache_dir / f"{plan.cache_key()[:32]}.zip"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, suffix=".part")
        os.close(fd)
        try:
            _write_kit(plan, Path(tmp))
            # Atomic: a concurrent request sees the old state or the whole kit, and two
            # builders write identical bytes anyway.
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _prune(cache_dir, keep=path)
    fingerprint = file_fingerprint(str(path))
    assert fingerprint is not None, path
    summary, description = kit_summary(plan)
    return BuiltKit(path=path, filename=f"{challenge.slug}-starting-kit.zip", size_bytes=fingerprint[0],
                    sha256=fingerprint[1], summary=summary, description=description)
