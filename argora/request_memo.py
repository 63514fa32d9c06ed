"""Answers remembered for one request: a page that asks "may this user see project P?" for thirty rows makes one
query per project, not thirty.

:class:`RequestMemoMiddleware` opens an empty memo for each request, kept in a context variable (each thread and each
asyncio task sees its own) and dropped when the response is made; :func:`remembered` computes a value once per key
within it. Outside a request (Celery tasks, commands, tests that call a selector directly) there is no memo and every
call computes afresh, so a role changed by a task or a command is never read stale. A service that changes what was
remembered within the request (a team member added, a role changed) calls :func:`forget`.

The memo lives here, not on the objects it is about (no private attributes stamped on a ``User``): the permission
selectors (:mod:`annotation.access`) are its users.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

_memo: contextvars.ContextVar[dict[Hashable, Any] | None] = contextvars.ContextVar("argora_request_memo", default=None)


def remembered(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, once per ``key`` within the current request; every time outside one."""
    memo = _memo.get()
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def forget() -> None:
    """Drop what the current request remembered (after a write that changes it); nothing outside a request."""
    memo = _memo.get()
    if memo is not None:
        memo.clear()


class RequestMemoMiddleware:
    """A fresh memo for each request (settings ``MIDDLEWARE``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _memo.set({})
        try:
            return self.get_response(request)
        finally:
            _memo.reset(token)
