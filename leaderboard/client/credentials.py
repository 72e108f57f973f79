"""Where the client keeps its login: the server's URL and a named API token, in a file only its owner reads.

``~/.config/readerboard/config.json`` (under ``$XDG_CONFIG_HOME`` when set), mode 0600 in a 0700 folder;
``READERBOARD_URL`` and ``READERBOARD_TOKEN`` override what the file holds, each on its own (CI jobs
need no file at all).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .errors import ClientError, NotLoggedIn

URL_VARIABLE = "READERBOARD_URL"
TOKEN_VARIABLE = "READERBOARD_TOKEN"


@dataclass(frozen=True)
class Login:
    url: str
    token: str  # "" when none is known: public reads still work
    # Where each came from, to say which one to fix when the server refuses it.
    url_from: str
    token_from: str


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "readerboard" / "config.json"


def url_clean(url: str) -> str:
    """The server's base URL, as the API paths are appended to it; a clear error for anything else."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ClientError(f"the server URL must start with http:// or https:// (got {url!r})")
    if parts.query or parts.fragment:
        raise ClientError(f"the server URL is the site's address, without ?query or #fragment (got {url!r})")
    return url


def _stored(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ClientError(f"cannot read {path}: {exc}; run `readerboard login` again") from None
    if not isinstance(data, dict):
        raise ClientError(f"{path} is not a readerboard login; run `readerboard login` again")
    return {k: v for k, v in data.items() if isinstance(v, str)}


def login_load(env: Mapping[str, str] | None = None, *, need_token: bool = True) -> Login:
    """The URL and token to use: the environment's, else the file's."""
    env = os.environ if env is None else env
    path = config_path(env)
    stored = _stored(path)
    url, url_from = env.get(URL_VARIABLE, ""), URL_VARIABLE
    if not url:
        url, url_from = stored.get("url", ""), str(path)
    token, token_from = env.get(TOKEN_VARIABLE, ""), TOKEN_VARIABLE
    if not token:
        token, token_from = stored.get("token", ""), str(path)
    if not url:
        raise NotLoggedIn(f"no server known: run `readerboard login --url https://...` (or set {URL_VARIABLE})")
    if need_token and not token:
        raise NotLoggedIn(f"not logged in: run `readerboard login` with an API token (or set {TOKEN_VARIABLE})")
    return Login(url=url_clean(url), token=token.strip(), url_from=url_from, token_from=token_from)


def login_save(*, url: str, token: str, token_name: str, env: Mapping[str, str] | None = None) -> Path:
    """Write the login, readable by its owner only from the first byte on (never a moment at 0644)."""
    path = config_path(env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    partial = path.with_name(path.name + ".part")
    try:
        partial.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"url": url, "token": token, "token_name": token_name}, out, indent=2)
        out.write("\n")
    os.replace(partial, path)
    os.chmod(path, 0o600)
    return path


def login_forget(env: Mapping[str, str] | None = None) -> Path | None:
    """Remove the stored login; the path it was at, or None if there was none."""
    path = config_path(env)
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path
