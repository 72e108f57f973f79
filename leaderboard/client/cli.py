"""``readerboard COMMAND``: the commands, each one call (or a few) of the REST API and a plain-text answer.

Exit status: 0 when the command did what it says (``follow``: the submission finished), 1 when it
could not (one line on stderr says why, never a traceback), 2 for a command line it does not take.
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from . import __version__
from .credentials import (
    TOKEN_VARIABLE,
    URL_VARIABLE,
    config_path,
    login_forget,
    login_load,
    login_save,
    url_clean,
)
from .errors import ClientError, NotLoggedIn, Refused
from .remote import Remote
from .terminal import (
    fit_columns,
    kinds_text,
    limits_text,
    moment,
    phase_state,
    quota_text,
    score_text,
    size_text,
    table,
)

FINAL = ("finished", "failed", "cancelled")
# Where the Data listing's kinds go, inside the kit's folder: the kit README's own layout.
KIND_FOLDERS = {"dev": "dev", "test-inputs": "test", "train": "train"}
# Board fields that are not scores (rankings.selectors.board_as_records): every other one is a column.
BOARD_FIELDS = ("rank", "team", "affiliation", "baseline", "status", "excluded", "coverage", "submitted_at",
                "ci95_low", "ci95_high", "p_vs_leader", "rank_group", "rank_low", "rank_high", "significance_note")
# How long ``follow`` keeps looking while the server cannot be reached.
UNREACHABLE_PATIENCE_S = 60.0
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2")


class Context:
    """What a command needs: the server (with the token when one is known), and where it prints."""

    def __init__(self, *, out: TextIO, env: dict[str, str] | None = None) -> None:
        self.out = out
        self.env = dict(os.environ if env is None else env)

    def remote(self, *, need_token: bool = True) -> Remote:
        login = login_load(self.env, need_token=need_token)
        return Remote(login.url, login.token, token_from=login.token_from)

    def say(self, text: str = "") -> None:
        print(text, file=self.out)


def _slug(value: str) -> str:
    return quote(value, safe="")


# --- login ----------------------------------------------------------------------------------------------


def _token_read(args: argparse.Namespace) -> str:
    if sys.stdin.isatty():
        token = getpass.getpass("API token (make one on the site's API tokens page, /accounts/tokens/): ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise ClientError("no token given: paste the key shown once on /accounts/tokens/ when the token was made")
    return token


def cmd_login(ctx: Context, args: argparse.Namespace) -> int:
    url = args.url or ctx.env.get(URL_VARIABLE, "")
    if not url:
        try:
            url = login_load(ctx.env, need_token=False).url
        except NotLoggedIn:
            raise ClientError("which server? run `readerboard login --url https://...`") from None
    url = url_clean(url)
    token = _token_read(args)
    remote = Remote(url, token, token_from="the prompt" if sys.stdin.isatty() else "stdin")
    tokens = remote.get("/api/v1/auth/tokens/")  # needs a valid token: a wrong one is refused here
    name = next((t["name"] for t in tokens if isinstance(t, dict) and token.startswith(t.get("prefix") or "\0")), "")
    path = login_save(url=url, token=token, token_name=name, env=ctx.env)
    ctx.say(f"Logged in to {url}{f' with the token {name!r}' if name else ''}; saved in {path} (mode 0600).")
    if ctx.env.get(TOKEN_VARIABLE):
        ctx.say(f"Note: {TOKEN_VARIABLE} is set in this shell, and it is used instead of the saved token.")
    return 0


def cmd_logout(ctx: Context, args: argparse.Namespace) -> int:
    path = login_forget(ctx.env)
    ctx.say(f"Removed {path}." if path else f"No saved login ({config_path(ctx.env)}).")
    ctx.say("The token itself still works until you revoke it on /accounts/tokens/.")
    return 0


# --- challenges -----------------------------------------------------------------------------------------


def _takes(phase: dict[str, Any]) -> str:
    text = kinds_text(phase.get("allowed_kinds") or [])
    if phase.get("protocol"):
        text += f"; turn by turn ({', '.join(phase['protocol'])})"
    return text


def _challenge_print(ctx: Context, detail: dict[str, Any], now: dt.datetime) -> None:
    team = detail.get("your_team")
    ctx.say(f"{detail['slug']}: {detail['title']}  [{detail['metric_suite']}; "
            f"{f'your team: {team}' if team else 'you are in no team of it'}]")
    rows = []
    extended = False
    for phase in detail.get("phases", []):
        quota = phase.get("your_quota")
        closes = moment(phase.get("closes_at"))
        if quota and quota.get("closes_at"):
            closes, extended = moment(quota["closes_at"]) + " *", True
        left = quota_text(quota) if team else limits_text(phase.get("quota") or {})
        rows.append([phase["slug"], phase["name"], phase_state(phase, now), moment(phase.get("opens_at")), closes,
                     _takes(phase), left])
    ctx.say(table(["phase", "name", "state", "opens (UTC)", "closes (UTC)", "takes",
                   "quota left" if team else "quota"], rows, indent="  "))
    if extended:
        ctx.say("  * the organizers extended this phase for your team")


def cmd_challenges(ctx: Context, args: argparse.Namespace) -> int:
    remote = ctx.remote(need_token=False)
    now = dt.datetime.now(dt.UTC)
    slugs = [args.slug] if args.slug else [c["slug"] for c in remote.get("/api/v1/challenges/")]
    if not slugs:
        ctx.say(f"No public challenge on {remote.url}.")
    for n, slug in enumerate(slugs):
        if n:
            ctx.say()
        _challenge_print(ctx, _challenge_get(remote, slug), now)
    if not remote.token:
        ctx.say(f"\n(Not logged in: `readerboard login --url {remote.url}` shows your team's quota.)")
    return 0


def _get_or(remote: Remote, path: str, *, not_found: str) -> dict[str, Any]:
    """The API's answer at ``path``; its 404 said in the participant's words."""
    try:
        answer: dict[str, Any] = remote.get(path)
    except Refused as exc:
        if exc.status == 404:
            raise ClientError(not_found) from None
        raise
    return answer


def _challenge_get(remote: Remote, slug: str) -> dict[str, Any]:
    return _get_or(remote, f"/api/v1/challenges/{_slug(slug)}/",
                   not_found=f"no challenge {slug!r} on {remote.url} (`readerboard challenges` lists them)")


def _phase_get(remote: Remote, slug: str, phase_slug: str) -> dict[str, Any]:
    detail = _challenge_get(remote, slug)
    for phase in detail.get("phases", []):
        if phase["slug"] == phase_slug:
            return dict(phase)
    names = ", ".join(p["slug"] for p in detail.get("phases", []))
    raise ClientError(f"no phase {phase_slug!r} in {slug} (its phases: {names})")


# --- download -------------------------------------------------------------------------------------------


def _kit_unpack(archive: Path, into: Path, *, overwrite: bool) -> tuple[Path | None, int, int]:
    """Unpack the kit beside its zip; files already there are kept unless ``overwrite`` (your edits of
    ``system/run.py`` survive a second download).  The kit's folder, files written, files kept."""
    written = kept = 0
    top: Path | None = None
    with zipfile.ZipFile(archive) as kit:
        for member in kit.infolist():
            name = Path(member.filename)
            if name.is_absolute() or ".." in name.parts:
                raise ClientError(f"the starting kit holds an unsafe path: {member.filename!r}")
            top = top or into / name.parts[0]
            target = into / name
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if target.exists() and not overwrite:
                kept += 1
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with kit.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (member.external_attr >> 16) & 0o777
            if mode:
                os.chmod(target, mode)
            written += 1
    return top, written, kept


def _fetch(ctx: Context, remote: Remote, entry: dict[str, Any], target: Path) -> None:
    if target.exists() and entry.get("sha256") and _sha256_of(target) == entry["sha256"]:
        ctx.say(f"  {target}  (already here, sha256 checked)")
        return
    size, sha256 = remote.download(entry["url"], target)
    if entry.get("sha256") and sha256 != entry["sha256"]:
        target.unlink()
        raise ClientError(f"{entry['filename']}: the download's sha256 is {sha256}, the listing says "
                          f"{entry['sha256']}; try again")
    ctx.say(f"  {target}  ({size_text(size)}, sha256 checked)")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def cmd_download(ctx: Context, args: argparse.Namespace) -> int:
    remote = ctx.remote()
    listing = _get_or(remote, f"/api/v1/challenges/{_slug(args.slug)}/data/",
                      not_found=f"no challenge {args.slug!r} on {remote.url}")
    if not listing.get("may_download"):
        raise ClientError(f"{args.slug}: {listing.get('message') or 'you may not download its files'}")
    where = Path(args.dir)
    kit = listing.get("starting_kit") or {}
    root = where / args.slug
    ctx.say(f"Into {where}/:")
    if kit.get("available") and not args.no_kit:
        archive = where / kit["filename"]
        _fetch(ctx, remote, kit, archive)
        top, written, kept = _kit_unpack(archive, where, overwrite=args.overwrite)
        root = top or root
        ctx.say(f"  {root}/  (the starting kit unpacked: {written} files"
                + (f"; {kept} already there kept, --overwrite replaces them)" if kept else ")"))
    waiting = []
    for section in listing.get("sections", []):
        if args.phase and section.get("phase") not in (None, args.phase):
            continue
        for entry in section.get("files", []):
            folder = KIND_FOLDERS.get(entry.get("kind", ""))
            if folder is None:
                continue  # the kit (above), or a dataset that runs on systems only
            if not entry.get("available") or not entry.get("url"):
                waiting.append(f"{entry['filename']} (from {moment(entry.get('opens_at'))} UTC)")
                continue
            _fetch(ctx, remote, entry, root / folder / entry["filename"])
    if waiting:
        ctx.say("Not downloadable yet: " + ", ".join(waiting))
    if kit.get("available") and not args.no_kit:
        ctx.say(f"Next: cd {root} and follow README.md.")
    return 0


# --- submit ---------------------------------------------------------------------------------------------


def kind_guess(path: Path) -> str:
    """predictions, code_bundle or docker_image, from the file itself: a zip with ``run.py`` or ``run.sh``
    at its top is a code bundle, a tar (``docker save``) an image, anything else prediction files."""
    name = path.name.lower()
    if name.endswith(ARCHIVE_SUFFIXES):
        return "docker_image"
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            if {"run.py", "run.sh"} & set(archive.namelist()):
                return "code_bundle"
    return "predictions"


def _submitted(ctx: Context, created: dict[str, Any], slug: str) -> None:
    position = created.get("queue_position")
    where = f", position {position} in the queue" if position else ""
    ctx.say(f"Submission {created['id']} accepted: {created['kind']} for {slug}/{created['phase']}, "
            f"{created['status']}{where}.")


def _submit(ctx: Context, remote: Remote, *, slug: str, phase_slug: str, file: Path, kind: str,
            description: str, dataset: str = "", filename: str | None = None, track: str = "") -> dict[str, Any]:
    phase = _phase_get(remote, slug, phase_slug)
    allowed = phase.get("allowed_kinds") or []
    if kind not in allowed:
        raise ClientError(f"{slug}/{phase_slug} takes {kinds_text(allowed)}, not {kinds_text([kind])}"
                          + ("" if kind != "predictions" else " (a zip with run.py at its top is a code bundle)"))
    if track and kind == "predictions":
        raise ClientError("--track names a budget track for a system; a prediction file has no measured cost")
    fields = {"phase": phase_slug, "description": description}
    if kind == "predictions":
        path = f"/api/v1/challenges/{_slug(slug)}/submissions/"
        if dataset:
            fields["dataset"] = dataset
    else:
        path = f"/api/v1/challenges/{_slug(slug)}/systems/"
        fields["kind"] = kind
        if track:  # the platform refuses a system over the track's size before it runs
            fields["track"] = track
    ctx.say(f"Uploading {filename or file.name} ({size_text(file.stat().st_size)}, {kinds_text([kind])}) "
            f"to {slug}/{phase_slug}...")
    created: dict[str, Any] = remote.post_file(path, fields=fields, file=file, filename=filename)
    _submitted(ctx, created, slug)
    return created


def _file_given(value: str) -> Path:
    path = Path(value)
    if not path.exists():
        raise ClientError(f"no such file: {value}")
    if not path.is_file():
        raise ClientError(f"not a file: {value}")
    return path


def cmd_submit(ctx: Context, args: argparse.Namespace) -> int:
    file = _file_given(args.file)
    kind = args.kind or kind_guess(file)
    remote = ctx.remote()
    created = _submit(ctx, remote, slug=args.slug, phase_slug=args.phase, file=file, kind=kind,
                      description=args.description, dataset=args.dataset, track=args.track)
    return follow_until_final(ctx, remote, created["id"], interval=args.interval) if args.follow else _hint(ctx, created)


def _hint(ctx: Context, created: dict[str, Any]) -> int:
    ctx.say(f"Follow it: readerboard follow {created['id']}")
    return 0


def cmd_submit_image(ctx: Context, args: argparse.Namespace) -> int:
    docker = shutil.which(args.docker)
    if docker is None:
        raise ClientError(f"{args.docker} is not installed (or not on PATH): `submit-image` saves the image with "
                          "`docker save`; or save it yourself and `readerboard submit ... image.tar`")
    remote = ctx.remote()
    _phase_get(remote, args.slug, args.phase)  # an unknown challenge or phase before minutes of saving
    with tempfile.TemporaryDirectory(prefix="readerboard-image-") as folder:
        archive = Path(folder) / "image.tar"
        ctx.say(f"Saving {args.image} with `docker save`...")
        done = subprocess.run([docker, "save", "-o", str(archive), args.image], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0 or not archive.exists():
            why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise ClientError(f"docker save {args.image} failed: {why}")
        filename = "".join(c if c.isalnum() or c in "-_." else "-" for c in args.image) + ".tar"
        created = _submit(ctx, remote, slug=args.slug, phase_slug=args.phase, file=archive, kind="docker_image",
                          description=args.description, filename=filename, track=args.track)
    return follow_until_final(ctx, remote, created["id"], interval=args.interval) if args.follow else _hint(ctx, created)


def cmd_submissions(ctx: Context, args: argparse.Namespace) -> int:
    remote = ctx.remote()
    mine = remote.get(f"/api/v1/challenges/{_slug(args.slug)}/submissions/")
    if not mine:
        ctx.say(f"Your team has no submission in {args.slug} yet.")
        return 0
    rows = [[str(s["id"]), s["phase"], s["kind"], s["status"], moment(s.get("created_at")),
             score_text(s.get("primary_score")), s.get("description") or ""] for s in mine]
    ctx.say(table(["id", "phase", "kind", "status", "submitted (UTC)", "score", "description"], rows, right=(0, 5)))
    return 0


# --- status, follow, log --------------------------------------------------------------------------------


def _submission_get(remote: Remote, pk: int) -> dict[str, Any]:
    return _get_or(remote, f"/api/v1/submissions/{pk}/", not_found=f"no submission {pk} of your team's on {remote.url}")


def _state_line(sub: dict[str, Any]) -> str:
    line = str(sub["status"])
    if sub.get("queue_position"):
        line += f", position {sub['queue_position']} in the queue"
    if sub.get("held_for_review"):
        line += f" (held for review: {sub['held_for_review']})"
    if sub.get("verdict") and sub["status"] in FINAL and sub["verdict"] != sub["status"]:
        line += f" ({sub['verdict']})"
    return line


def _moments_text(sub: dict[str, Any]) -> str:
    """submitted 2026-12-02 18:47:11 UTC, started 18:47:12, finished 18:47:15 (a date only where it changes)."""
    parts, day = [], ""
    for word, field in (("submitted", "created_at"), ("started", "started_at"), ("finished", "finished_at")):
        if sub.get(field):
            text = moment(sub[field], seconds=True)
            parts.append(f"{word} {text.removeprefix(day + ' ') if day and text.startswith(day) else text}")
            day = text.split(" ")[0]
    return ", ".join(parts) + " (UTC)"


def status_text(sub: dict[str, Any]) -> str:
    lines = [f"Submission {sub['id']}: {sub['kind']} for phase {sub['phase']}, team {sub['team']}",
             f"  status: {_state_line(sub)}",
             "  " + _moments_text(sub)]
    if sub.get("description"):
        lines.append(f"  description: {sub['description']}")
    if sub.get("failure_reason"):
        lines.append(f"  reason: {sub['failure_reason']}")
    if sub.get("run_seconds") is not None:
        memory = f", peak memory {sub['peak_memory_mb']} MB" if sub.get("peak_memory_mb") is not None else ""
        seconds = f"{sub['run_seconds']:.2f}".rstrip("0").rstrip(".")
        lines.append(f"  run: {seconds} s{memory}, exit {sub.get('exit') or '-'}")
    scores = sub.get("scores") or []
    if scores:
        rows = [[s.get("dataset") or "(overall)", s.get("label") or s.get("metric", ""),
                 "sealed" if s.get("sealed") and s.get("value") is None else score_text(s.get("value"))]
                for s in scores]
        lines.append("  scores:")
        lines.append(table(["dataset", "metric", "value"], rows, indent="    ", right=(2,)))
    if sub.get("primary_score") is not None:
        lines.append(f"  ranking score: {score_text(sub['primary_score'])}")
    if sub.get("log_available"):
        lines.append(f"  log: readerboard log {sub['id']}")
    return "\n".join(lines)


def cmd_status(ctx: Context, args: argparse.Namespace) -> int:
    ctx.say(status_text(_submission_get(ctx.remote(), args.id)))
    return 0


def follow_until_final(ctx: Context, remote: Remote, pk: int, *, interval: float, timeout: float | None = None,
            sleep: Callable[[float], None] = time.sleep) -> int:
    started = time.monotonic()
    last = ""
    unreachable_since: float | None = None
    while True:
        try:
            sub = _submission_get(remote, pk)
        except Refused:
            raise
        except ClientError as exc:
            # A server restarting (a deployment) is not the end of a run: look again for a while.
            now = time.monotonic()
            unreachable_since = unreachable_since or now
            if now - unreachable_since > UNREACHABLE_PATIENCE_S:
                raise
            if now == unreachable_since:
                ctx.say(f"{dt.datetime.now(dt.UTC):%H:%M:%S} {exc}; trying again for {UNREACHABLE_PATIENCE_S:g} s")
            sleep(interval)
            continue
        unreachable_since = None
        line = _state_line(sub)
        if line != last:
            ctx.say(f"{dt.datetime.now(dt.UTC):%H:%M:%S} {line}")
            last = line
        if sub["status"] in FINAL:
            ctx.say(status_text(sub))
            if sub["status"] == "finished":
                return 0
            raise ClientError(f"submission {pk} {sub['status']}"
                              + (f": {sub['failure_reason']}" if sub.get("failure_reason") else ""))
        if timeout is not None and time.monotonic() - started > timeout:
            raise ClientError(f"submission {pk} is still {sub['status']} after {timeout:g} s "
                              f"(`readerboard follow {pk}` goes on following it)")
        sleep(interval)


def cmd_follow(ctx: Context, args: argparse.Namespace) -> int:
    return follow_until_final(ctx, ctx.remote(), args.id, interval=args.interval, timeout=args.timeout)


def cmd_log(ctx: Context, args: argparse.Namespace) -> int:
    remote = ctx.remote()
    try:
        answer = remote.get(f"/api/v1/submissions/{args.id}/log/")
    except Refused as exc:
        if exc.status == 404:
            raise ClientError(f"no submission {args.id} of your team's on {remote.url}") from None
        raise
    log = answer.get("log")
    if log is None:
        ctx.say(answer.get("note") or f"Submission {args.id} has no log: only a system's run writes one.")
    elif not log:
        ctx.say(f"(submission {args.id}, {answer.get('status')}: the run wrote nothing to stdout or stderr)")
    else:
        ctx.out.write(log if log.endswith("\n") else log + "\n")
    for note in answer.get("platform_notes") or []:
        ctx.say(f"[platform] {note}")
    return 0


# --- board ----------------------------------------------------------------------------------------------


def board_table(board: dict[str, Any], *, width: int | None) -> str:
    rows_in = board.get("rows") or []
    columns = [k for k in (rows_in[0] if rows_in else {}) if k not in BOARD_FIELDS]
    with_ci = any(r.get("ci95_low") is not None for r in rows_in)
    headers = ["rank", "team", "submitted (UTC)", *columns] + (["95% CI"] if with_ci else [])
    rows = []
    for r in rows_in:
        team = r["team"] + (" (baseline)" if r.get("baseline") else "")
        if r.get("excluded"):
            team += f" [excluded: {r['excluded']}]"
        if r.get("coverage"):
            team += f" [{r['coverage']}]"
        cells = ["-" if r.get("rank") is None else str(r["rank"]), team, moment(r.get("submitted_at")),
                 *(score_text(r.get(c)) for c in columns)]
        if with_ci:
            cells.append("-" if r.get("ci95_low") is None else
                         f"{score_text(r['ci95_low'])}-{score_text(r['ci95_high'])}")
        rows.append(cells)
    lines = [f"{board['challenge']} / {board['phase']}: {board.get('ranking_note') or board.get('ranking', '')}"]
    if not rows:
        lines.append("No ranked submission yet.")
        return "\n".join(lines)
    shown = len(headers)
    if width is not None:
        shown = fit_columns(headers, rows, keep=4, width=width)
    lines.append(table(headers[:shown], [r[:shown] for r in rows], right=[0, *range(3, shown)]))
    if shown < len(headers):
        lines.append(f"({len(headers) - shown} more columns: {', '.join(headers[shown:])}; --wide shows them, "
                     "--json gives everything)")
    for label, note in (board.get("withheld") or {}).items():
        lines.append(f"{label}: {note}")
    return "\n".join(lines)


def cmd_board(ctx: Context, args: argparse.Namespace) -> int:
    remote = ctx.remote(need_token=False)
    try:
        board = remote.get(f"/api/v1/challenges/{_slug(args.slug)}/phases/{_slug(args.phase)}/leaderboard/")
    except Refused as exc:
        if exc.status == 404:
            raise ClientError(f"no board {args.slug}/{args.phase} on {remote.url} that you may see "
                              f"(`readerboard challenges {args.slug}` lists its phases)") from None
        raise
    if args.json:
        ctx.say(json.dumps(board, indent=2, ensure_ascii=False))
        return 0
    width = None if args.wide or not ctx.out.isatty() else shutil.get_terminal_size().columns
    ctx.say(board_table(board, width=width))
    return 0


# --- the command line -----------------------------------------------------------------------------------


def parser_build() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="readerboard",
        description="Take part in a Readerboard challenge from the command line: log in with an API token, "
                    "list challenges, download the data and starting kit, submit, follow, read logs and boards.",
        epilog=f"The login is kept in {config_path()} (mode 0600); {URL_VARIABLE} and {TOKEN_VARIABLE} "
               "override it.  Exit status: 0 done, 1 refused or failed (one line says why), 2 a wrong command line.")
    parser.add_argument("--version", action="version", version=f"readerboard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Callable[[Context, argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    def follow_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--follow", action="store_true", help="then follow it until it is final")
        sub.add_argument("--interval", type=float, default=3.0, help="seconds between looks (default 3)")

    login = command("login", cmd_login, "store the server's URL and an API token (read from the terminal, or "
                                         "one line of stdin), after checking the token with the server")
    login.add_argument("--url", help="the site's address, e.g. https://readerboard.example.org")
    command("logout", cmd_logout, "forget the stored login (the token stays valid until revoked on the site)")

    challenges = command("challenges", cmd_challenges,
                         "list challenges: phases, UTC deadlines, what each takes, your team's quota left")
    challenges.add_argument("slug", nargs="?", help="one challenge only")

    download = command("download", cmd_download,
                       "download the starting kit (unpacked) and the data files you may have, sha256 checked")
    download.add_argument("slug")
    download.add_argument("--dir", default=".", help="where (default: here); data files go into the kit's "
                                                     "folder, in dev/, test/ and train/ as its README expects")
    download.add_argument("--phase", help="only the data of this phase (and the training data)")
    download.add_argument("--no-kit", action="store_true", help="the data files only")
    download.add_argument("--overwrite", action="store_true", help="replace kit files already unpacked here")

    submit = command("submit", cmd_submit, "submit prediction files (a .json or a zip of <dataset>.json), a code "
                                           "bundle (a zip with run.py at its top) or a `docker save` archive")
    submit.add_argument("slug")
    submit.add_argument("phase")
    submit.add_argument("file")
    submit.add_argument("--kind", choices=["predictions", "code_bundle", "docker_image"],
                        help="what the file is (default: guessed from the file)")
    submit.add_argument("--description", default="", help="a note kept with the submission (300 characters)")
    submit.add_argument("--track", default="", help="a system: the phase's budget track it is meant for (refused "
                        "at once if its size is over the track's)")
    submit.add_argument("--dataset", default="", help="prediction files: the dataset a single-dataset file is for")
    follow_options(submit)

    image = command("submit-image", cmd_submit_image,
                    "submit a local Docker image: saved with `docker save`, uploaded as the site's system form takes it")
    image.add_argument("slug")
    image.add_argument("phase")
    image.add_argument("image", help="the image's name or id, e.g. my-system:latest")
    image.add_argument("--description", default="")
    image.add_argument("--track", default="", help="the phase's budget track the image is meant for")
    image.add_argument("--docker", default="docker", help=argparse.SUPPRESS)
    follow_options(image)

    listing = command("submissions", cmd_submissions, "your team's submissions in a challenge")
    listing.add_argument("slug")

    status = command("status", cmd_status, "a submission: status, queue position, scores, the reason if it failed")
    status.add_argument("id", type=int)

    follow = command("follow", cmd_follow, "watch a submission until it is final, then show its scores "
                                           "(exit status 1 if it failed)")
    follow.add_argument("id", type=int)
    follow.add_argument("--interval", type=float, default=3.0, help="seconds between looks (default 3)")
    follow.add_argument("--timeout", type=float, help="give up after this many seconds")

    log = command("log", cmd_log, "a submission's log (stdout and stderr, capped), as the API gives it")
    log.add_argument("id", type=int)

    board = command("board", cmd_board, "a phase's board as a table")
    board.add_argument("slug")
    board.add_argument("phase")
    board.add_argument("--wide", action="store_true", help="every column, however wide")
    board.add_argument("--json", action="store_true", help="the API's answer as it is")
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, env: dict[str, str] | None = None) -> int:
    args = parser_build().parse_args(argv)
    ctx = Context(out=out or sys.stdout, env=env)
    try:
        code: int = args.handler(ctx, args)
    except ClientError as exc:
        ctx.out.flush()
        print(f"readerboard: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("readerboard: interrupted", file=sys.stderr)
        return 130
    return code
