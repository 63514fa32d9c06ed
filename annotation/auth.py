"""API token authentication that reads the user's Worker row in the same query.

Every annotation request (next HIT, submit) needs the calling user's :class:`~annotation.models.Worker`; DRF's
``TokenAuthentication`` already joins token and user, and this subclass adds the worker (a reverse one-to-one,
cached on the user as ``select_related`` would; read with raw SQL: :mod:`annotation.rawsql`), so
:func:`annotation.services.worker_for_user` / :func:`annotation.selectors.worker_of_user` answer from it without a
query of their own. Configured in ``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from . import rawsql
from .models import Worker


class WorkerTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        token_model, user_model = self.get_model(), get_user_model()
        user_pk = rawsql.column(user_model, user_model._meta.pk.name)
        sql = (
            f"SELECT {rawsql.select((token_model, 't'), (user_model, 'u'), (Worker, 'w'))} "
            f"FROM {rawsql.table(token_model)} t JOIN {rawsql.table(user_model)} u "
            f"ON u.{user_pk} = t.{rawsql.column(token_model, 'user')} LEFT JOIN {rawsql.table(Worker)} w "
            f"ON w.{rawsql.column(Worker, 'user')} = u.{user_pk} WHERE t.{rawsql.column(token_model, 'key')} = %s"
        )
        with rawsql.cursor() as cursor:
            cursor.execute(sql, [key])
            row = cursor.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token, user, worker = rawsql.instances(row, (token_model, user_model, Worker))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        token.user = user
        remember_worker(user, worker)
        return user, token


def _worker_relation():
    return get_user_model().annotation_worker.related  # not type(user): request.user is a SimpleLazyObject


def remember_worker(user, worker) -> None:
    """Put a just-created worker in the user's cache, so later look-ups in this request see it."""
    _worker_relation().set_cached_value(user, worker)


def cached_worker(user):
    """``(True, worker or None)`` when the user's Worker was read with the user (by
    :class:`WorkerTokenAuthentication`), else ``(False, None)``."""
    related = _worker_relation()
    if related.is_cached(user):
        return True, related.get_cached_value(user)
    return False, None
