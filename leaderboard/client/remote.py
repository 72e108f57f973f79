"""The platform's REST API over HTTP (``/api/v1/...``, described at ``/api/schema/``), with the standard library.

Every answer that is not a success becomes one ``ClientError`` whose text says what happened in the
user's words, with the server's own reason (its JSON ``detail``) where it gave one.  The token is only
ever sent to the configured server: an absolute URL from an answer (the Data listing's) is followed by
its path on that server.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from . import __version__
from .errors import ClientError, Refused

USER_AGENT = f"readerboard-client/{__version__}"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Message
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            raise ClientError(f"the server answered HTTP {self.status} with something that is not JSON") from None


def _detail(body: bytes) -> str:
    """The server's reason: the API's ``{"detail": ...}`` (every API error has one), else nothing."""
    try:
        data = json.loads(body)
    except ValueError:
        return ""
    detail = data.get("detail") if isinstance(data, dict) else None
    # One line: an upload refused for several datasets names each on a line of its own.
    return "; ".join(" ".join(line.split()) for line in str(detail or "").splitlines() if line.strip())


class MultipartBody(io.RawIOBase):
    """A multipart/form-data body read in order, the file streamed from disk (an image archive can be
    gigabytes): its exact length is known up front, so no chunked encoding is needed."""

    def __init__(self, fields: Mapping[str, str], file_field: str, path: Path, filename: str) -> None:
        self.boundary = "readerboard-" + secrets.token_hex(16)
        head = b"".join(
            f'--{self.boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value.encode()
            + b"\r\n"
            for name, value in fields.items()
        )
        safe = filename.replace("\\", "_").replace('"', "_").replace("\r", "_").replace("\n", "_")
        head += (f'--{self.boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{safe}"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n").encode()
        tail = f"\r\n--{self.boundary}--\r\n".encode()
        self.length = len(head) + path.stat().st_size + len(tail)
        self._parts: list[BinaryIO] = [io.BytesIO(head), open(path, "rb"), io.BytesIO(tail)]

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self.boundary}"

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        out = b""
        while self._parts and (size < 0 or len(out) < size):
            piece = self._parts[0].read(-1 if size < 0 else size - len(out))
            if piece:
                out += piece
            else:
                self._parts.pop(0).close()
        return out

    def close(self) -> None:
        for part in self._parts:
            part.close()
        self._parts = []
        super().close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would send the token on to wherever one points (another host
    included), and the API itself never redirects.  The 3xx is said to the user instead."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class Remote:
    """One server and, optionally, the token to call it with."""

    def __init__(self, url: str, token: str = "", *, token_from: str = "", timeout: float = 60.0) -> None:
        self.url = url
        self.token = token
        self.token_from = token_from
        self.timeout = timeout

    def _address(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            parts = urlsplit(path_or_url)
            path_or_url = parts.path + (f"?{parts.query}" if parts.query else "")
        return self.url + path_or_url

    def _send(self, method: str, path: str, *, data: Any = None, headers: Mapping[str, str] | None = None,
              timeout: float | None = None) -> Any:
        """The raw response (open, to be read or streamed by the caller); a ClientError for any failure."""
        request = urllib.request.Request(self._address(path), data=data, method=method)
        request.add_header("User-Agent", USER_AGENT)
        request.add_header("Accept", "application/json")
        if self.token:
            request.add_header("Authorization", f"Token {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            return _OPENER.open(request, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                raise self._refusal(exc.code, exc.read(), exc.headers, path) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if data is not None and isinstance(reason, BrokenPipeError | ConnectionResetError):
                raise ClientError(f"the server at {self.url} closed the connection while the file was being sent "
                                  "(over its size limit?)") from None
            why = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
            raise ClientError(f"cannot reach the server at {self.url}: {why}") from None
        except TimeoutError:
            raise ClientError(f"no answer from {self.url} within {timeout or self.timeout:g} s") from None
        except (ConnectionError, OSError) as exc:
            raise ClientError(f"the connection to {self.url} failed: {exc.strerror or exc}") from None

    def _refusal(self, status: int, body: bytes, headers: Message, path: str) -> ClientError:
        detail = _detail(body)
        if status == 401:
            if not self.token:
                return Refused(f"{detail or 'the server wants a login'}: run `readerboard login` with an API token",
                               status=status, detail=detail)
            return Refused(f"the server refused the API token ({detail.rstrip('.') or 'HTTP 401'}; the token from "
                           f"{self.token_from}): "
                           f"make one on {self.url}/accounts/tokens/ and run `readerboard login`",
                           status=status, detail=detail)
        if status == 413:
            return Refused(f"the server refused the upload as too large (HTTP 413){': ' + detail if detail else ''}",
                           status=status, detail=detail)
        if status == 429:
            wait = headers.get("Retry-After")
            return Refused(f"{detail or 'too many requests'}{f' (try again in {wait} s)' if wait else ''}",
                           status=status, detail=detail)
        if 300 <= status < 400:
            where = headers.get("Location") or "another address"
            return ClientError(f"the server sends {path} on to {where}: if the site moved (to https://, say), "
                               "run `readerboard login --url` with its address")
        if status >= 500:
            return ClientError(f"the server failed on {path} (HTTP {status}); try again later, or tell the organizers")
        if status == 404 and not detail:
            detail = f"{path} does not exist on {self.url}"
        return Refused(f"refused by the server (HTTP {status}): {detail or 'no reason given'}",
                       status=status, detail=detail)

    def get(self, path: str) -> Any:
        with self._send("GET", path) as response:
            return Answer(response.status, response.headers, response.read()).json()

    def post_file(self, path: str, *, fields: Mapping[str, str], file: Path, filename: str | None = None,
                  timeout: float = 900.0) -> Any:
        """POST a multipart form with one file (``file``), streamed; the answer's JSON."""
        body = MultipartBody(fields, "file", file, filename or file.name)
        headers = {"Content-Type": body.content_type, "Content-Length": str(body.length)}
        try:
            with self._send("POST", path, data=body, headers=headers, timeout=timeout) as response:
                return Answer(response.status, response.headers, response.read()).json()
        finally:
            body.close()

    def download(self, path_or_url: str, target: Path) -> tuple[int, str]:
        """Stream a file to ``target`` (through ``target``.part, renamed when whole): its size and sha256."""
        partial = target.with_name(target.name + ".part")
        digest, size = hashlib.sha256(), 0
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._send("GET", path_or_url, timeout=300.0) as response:
            try:
                with open(partial, "wb") as out:
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
        os.replace(partial, target)
        return size, digest.hexdigest()
