"""One time budget per request for Redis calls (the cache and the broker), and a short circuit breaker.

A hung -- not down -- Redis answers nothing: every call waits for its socket timeout, and a submission makes several
in a row (a debounce lock per job, a publish that kombu retries). So the calls share one budget per request:

- :class:`ServiceBudgetMiddleware` gives each request ``ARGORA_SERVICE_TIMEOUT`` seconds for Redis calls, kept in a
  context variable; the time spent inside Redis calls is taken from it, and each call may wait at most what is left
  (its own socket timeout when that is shorter). A request whose budget is spent makes no more Redis calls.
- Once a Redis server timed out or refused within a request, the breaker for that server opens: for
  ``ARGORA_SERVICE_BREAKER_SECONDS`` every request of this process skips its calls to it at once.

Both act in ONE place, the redis-py connection class (:class:`BudgetedConnection`) that the cache backend below
and the broker transport (:mod:`argora.broker`) use: a call that is skipped raises :class:`ServiceSkipped`, a redis
``ConnectionError``, so kombu and redis-py treat it as a server that is down. Outside a request (Celery workers,
beat, commands) there is no budget and no breaker: each call has its socket timeout, as configured.

:class:`RedisCache` is Django's Redis cache on that connection class, with what a request does without the cache:
a read that gets no answer is a miss (``get`` gives the default: job progress shows none), a write is dropped with
a log line; ``add``, ``incr`` and ``decr`` still raise, because a lock or a counter cannot be made up (the
debounce helper logs it and enqueues nothing: :func:`argora.debounce.enqueue_once`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import redis
from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

log = logging.getLogger(__name__)

# a call with less left than this is not started: its socket timeout would be too short to mean anything
MIN_CALL_SECONDS = 0.02
UNAVAILABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


class ServiceSkipped(redis.exceptions.ConnectionError):
    """A Redis call not made: its server's breaker is open, or the request's time for such calls is spent."""


class Budget:
    """Seconds a request may still spend in Redis calls (``left``); :meth:`spending` takes a call's time off."""

    def __init__(self, seconds: float):
        self.left = float(seconds)
        self._since: float | None = None  # start of the outermost call running now

    @property
    def busy(self) -> bool:
        return self._since is not None

    def remaining(self) -> float:
        return self.left - (time.monotonic() - self._since if self._since is not None else 0.0)

    @contextmanager
    def spending(self):
        if self._since is not None:  # inside a call already measured (the handshake of a connect)
            yield
            return
        self._since = time.monotonic()
        try:
            yield
        finally:
            self.left -= time.monotonic() - self._since
            self._since = None


_budget: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("argora_service_budget", default=None)


def current() -> Budget | None:
    """The budget of the request being served (``None`` outside a request)."""
    return _budget.get()


@contextmanager
def limit(seconds: float | None = None):
    """Run the block with a budget of ``seconds`` (default ``ARGORA_SERVICE_TIMEOUT``) for its Redis calls."""
    token = _budget.set(Budget(float(settings.ARGORA_SERVICE_TIMEOUT) if seconds is None else seconds))
    try:
        yield _budget.get()
    finally:
        _budget.reset(token)


class ServiceBudgetMiddleware:
    """Every request gets one budget for its Redis calls (first in ``MIDDLEWARE``: it covers everything after)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with limit():
            return self.get_response(request)


# --- the breaker: per Redis server, per process ----------------------------------------------------------------------
_open_until: dict[tuple, float] = {}
_lock = threading.Lock()


def breaker_open(server: tuple) -> bool:
    return time.monotonic() < _open_until.get(server, 0.0)


def trip(server: tuple, exc: BaseException) -> None:
    """``server`` timed out or refused: skip its calls for ``ARGORA_SERVICE_BREAKER_SECONDS`` (0: never)."""
    seconds = float(getattr(settings, "ARGORA_SERVICE_BREAKER_SECONDS", 5))
    if seconds <= 0:
        return
    with _lock:
        was_open = breaker_open(server)
        _open_until[server] = time.monotonic() + seconds
    if not was_open:
        log.warning(
            "Redis %s:%s did not answer (%s): its cache and broker calls are skipped for %g s",
            server[0],
            server[1],
            exc,
            seconds,
        )


def reset_breakers() -> None:
    """Close every breaker (tests; a process that knows its Redis is back)."""
    with _lock:
        _open_until.clear()


def _shorter(configured: float | None, left: float) -> float:
    return left if configured is None else min(float(configured), left)


if TYPE_CHECKING:  # the mixin's attributes and super() calls are those of the redis-py connection it is mixed into
    _ConnectionBase = redis.Connection
else:
    _ConnectionBase = object


class BudgetedConnectionMixin(_ConnectionBase):
    """A redis-py connection whose connect, send and read take their time from the request's budget."""

    def _server(self) -> tuple:
        return (self.host, self.port)

    def _budgeted(self, call, *args, **kwargs):
        budget = _budget.get()
        if budget is None:
            return call(*args, **kwargs)
        outer = not budget.busy
        if outer:
            if breaker_open(self._server()):
                raise ServiceSkipped(f"Redis {self.host}:{self.port} did not answer a moment ago; call skipped")
            if budget.left < MIN_CALL_SECONDS:
                raise ServiceSkipped("this request's time for cache and broker calls is spent; call skipped")
        with budget.spending():
            if self._sock is not None:
                self._sock.settimeout(_shorter(self._socket_timeout, max(budget.remaining(), MIN_CALL_SECONDS)))
            try:
                return call(*args, **kwargs)
            except UNAVAILABLE as exc:
                if outer and not isinstance(exc, ServiceSkipped):
                    trip(self._server(), exc)
                raise
            finally:
                if outer and self._sock is not None:
                    try:
                        self._sock.settimeout(self._socket_timeout)
                    except OSError:
                        pass

    def _connect(self):
        budget = _budget.get()
        if budget is None:
            return super()._connect()
        left = max(budget.remaining(), MIN_CALL_SECONDS)
        configured = self._socket_connect_timeout
        self._socket_connect_timeout = _shorter(configured, left)
        try:
            sock = super()._connect()
        finally:
            self._socket_connect_timeout = configured
        sock.settimeout(_shorter(self._socket_timeout, max(budget.remaining(), MIN_CALL_SECONDS)))  # the handshake
        return sock

    def connect_check_health(self, *args, **kwargs):
        return self._budgeted(super().connect_check_health, *args, **kwargs)

    def send_packed_command(self, *args, **kwargs):
        return self._budgeted(super().send_packed_command, *args, **kwargs)

    def read_response(self, *args, **kwargs):
        return self._budgeted(super().read_response, *args, **kwargs)


class BudgetedConnection(BudgetedConnectionMixin, redis.Connection):
    pass


class BudgetedSSLConnection(BudgetedConnectionMixin, redis.SSLConnection):
    pass


def connection_class_for(url: str):
    """The budgeted connection class for a ``redis://`` / ``rediss://`` URL (``None``: a unix socket, left alone)."""
    if url.startswith("rediss://"):
        return BudgetedSSLConnection
    if url.startswith("redis://"):
        return BudgetedConnection
    return None


# --- the cache backend ---------------------------------------------------------------------------------------------
def _unavailable(op: str, key, exc: BaseException, result):
    (log.debug if isinstance(exc, ServiceSkipped) else log.warning)(
        "cache unavailable: %s %s not done (%s)", op, key, exc
    )
    return result


class RedisCache(DjangoRedisCache):
    """Django's Redis cache on :class:`BudgetedConnection`: unanswered reads are misses, unanswered writes are dropped
    (both logged); ``add`` / ``incr`` / ``decr`` raise as Django's do."""

    # set by Django's RedisCache.__init__ (private there, so django-stubs leaves them out)
    _servers: list[str]
    _options: dict[str, Any]

    def __init__(self, server, params):
        super().__init__(server, params)
        connection_class = connection_class_for(self._servers[0])
        if connection_class is not None:
            self._options = {"connection_class": connection_class, **self._options}

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except UNAVAILABLE as exc:
            return _unavailable("get", key, exc, default)

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except UNAVAILABLE as exc:
            return _unavailable("get_many", keys, exc, {})

    def has_key(self, key, version=None):
        try:
            return super().has_key(key, version)
        except UNAVAILABLE as exc:
            return _unavailable("has_key", key, exc, False)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().set(key, value, timeout, version)
        except UNAVAILABLE as exc:
            return _unavailable("set", key, exc, None)

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().set_many(data, timeout, version)
        except UNAVAILABLE as exc:
            return _unavailable("set_many", list(data), exc, list(data))

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().touch(key, timeout, version)
        except UNAVAILABLE as exc:
            return _unavailable("touch", key, exc, False)

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except UNAVAILABLE as exc:
            return _unavailable("delete", key, exc, False)

    def delete_many(self, keys, version=None):
        try:
            return super().delete_many(keys, version)
        except UNAVAILABLE as exc:
            return _unavailable("delete_many", keys, exc, None)
