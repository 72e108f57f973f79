"""Errors services raise for people to read; views turn them into 4xx responses."""

from __future__ import annotations


class ServiceError(Exception):
    """A request that cannot be done as asked; the message says why and what to do."""

    status_code = 400

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class PermissionDenied(ServiceError):
    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class Conflict(ServiceError):
    status_code = 409


class DuplicateUpload(Conflict):
    """The same file as an earlier submission: refused unless the caller says to send it again.
    ``duplicate_of`` is that submission's id (the API's answer carries it)."""

    def __init__(self, message: str, *, duplicate_of: int, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.duplicate_of = duplicate_of


class QuotaExceeded(ServiceError):
    status_code = 429


class PayloadTooLarge(ServiceError):
    status_code = 413


class TooManyAttempts(ServiceError):
    """Refused for a while (failed logins); ``retry_after`` says how long, in whole seconds."""

    status_code = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
