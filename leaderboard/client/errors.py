"""What goes wrong, said in the user's words: each is printed as one line, and the command exits non-zero."""

from __future__ import annotations


class ClientError(Exception):
    """A failure the user can act on; ``str()`` is the one line the command prints."""

    exit_code = 1


class NotLoggedIn(ClientError):
    pass


class Refused(ClientError):
    """The server answered with a 4xx: ``status`` and its own words (``detail``)."""

    def __init__(self, message: str, *, status: int, detail: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail
