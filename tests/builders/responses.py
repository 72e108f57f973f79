"""The body of what the test client answered, streamed or not.

django-stubs types the test client's answer as an ``HttpResponseBase`` (with the client's own
attributes): ``.content`` or ``.streaming_content`` is the view's choice, so neither is typed on it.
``getvalue()`` is on every response class: ``.content``, or the stream joined.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from django.http.response import HttpResponseBase

if TYPE_CHECKING:
    # What Client.get() and the like return for django-stubs: the test client's attributes (json(),
    # templates, ...) on the base class.  Only a type: at run time the view's own response has them.
    from django.test.client import _MonkeyPatchedWSGIResponse as ClientResponse
else:
    ClientResponse = HttpResponseBase

__all__ = ["ClientResponse", "body", "streamed", "text"]


def body(response: HttpResponseBase) -> bytes:
    """The whole body, whether the view streamed it or not."""
    # Consuming the stream closes the response (the test client wraps it); closing it
    # again would fire request_finished and close the test's database connection.
    return response.getvalue()


def streamed(response: HttpResponseBase) -> bytes:
    """The whole body of an answer the test expects streamed (a file, an archive); any other fails."""
    assert response.streaming, f"{response!r} is not streamed"
    return response.getvalue()


def text(response: HttpResponseBase) -> str:
    """The body as text, HTML entities decoded (a page's text as a reader sees it)."""
    return html.unescape(body(response).decode("utf-8"))
