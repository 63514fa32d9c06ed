"""The Redis broker transport (``CELERY_BROKER_TRANSPORT`` when ``CELERY_BROKER_URL`` is ``redis://``; a ``rediss://``
URL keeps kombu's, whose TLS defaults hang on the transport's name): kombu's own, with two changes.

1. Its connections are :class:`argora.budget.BudgetedConnection`: inside a web request a publish takes its time from
   the request's budget and is skipped while the breaker of its Redis is open (:mod:`argora.budget`).
2. A worker survives its broker going away with messages unacknowledged. When the connection is lost, celery 5.7's
   consumer calls kombu's ``Connection.collect()`` -- which detaches the transport (``transport.client = None``)
   even when closing a channel failed -- and then ``Connection.close()``, which closes that channel again; the
   channel requeues its unacknowledged messages (a late-ack task running, a prefetched message), needs a Redis
   client for it, and kombu's ``Channel._connparams`` reads ``self.connection.client.hostname``:
   ``AttributeError: 'NoneType' object has no attribute 'hostname'``. That is no connection error, so the consumer
   does not reconnect: ``Unrecoverable error`` and the worker exits (celery 5.7.0 with kombu 5.7.0; celery 5.6.3
   does not close the connection a second time). Here a channel of a detached transport raises redis'
   ``ConnectionError`` instead, which the consumer ignores while it reconnects; the messages it could not requeue
   stay in Redis' unacked set and come back after the visibility timeout, as for a killed worker.
   ``tests/test_worker_broker_restart.py`` kills and restarts a private redis-server under a real worker.
"""

from __future__ import annotations

import redis
from kombu.transport import redis as kombu_redis

from .budget import BudgetedConnection, BudgetedSSLConnection


class Channel(kombu_redis.Channel):
    connection_class = BudgetedConnection
    connection_class_ssl = BudgetedSSLConnection

    def _connparams(self, asynchronous=False):
        if self.connection is None or self.connection.client is None:  # closed after its connection was (see above)
            raise redis.exceptions.ConnectionError("the broker connection of this channel is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    Channel = Channel
