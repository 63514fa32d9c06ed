"""Raw SQL for the one-request-per-HIT path (token auth, submit, reserve the next HIT).

Each such read fetches in one statement what the ORM fetches in two or three, and skips the ORM's query compilation,
which costs a worker's request as much as the database round trip does (``bench/allocation.py``). The SQL names
columns and tables through the models' metadata, and :func:`instance` converts every value as the ORM converts it,
so the instances are the ones a queryset would have built.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.postgresql.base import ServerBindingCursor
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute
from django.db.models.signals import post_init, pre_init


def skip_locked() -> bool:
    """The database can pick rows with ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL)."""
    return bool(connection.features.has_select_for_update_skip_locked)


def serialised_writes() -> bool:
    """SQLite (>= 3.35, for ``UPDATE ... RETURNING``): every transaction is IMMEDIATE (the settings), so a writing
    transaction holds the database's only write lock from its start; what it reads cannot change under it."""
    return connection.vendor == "sqlite" and connection.Database.sqlite_version_info >= (3, 35)


def cursor():
    """A cursor for these statements. On PostgreSQL its parameters are bound on the server, so psycopg prepares a
    statement once this connection has run it ``prepare_threshold`` times (``DATABASE_PREPARE_THRESHOLD``, 5 by
    default; settings.py): later runs skip the parsing and, where the server keeps a generic plan, the planning, which
    cost it more than running these statements does. The ORM's own cursors keep Django's client-side binding."""
    db = connections[DEFAULT_DB_ALIAS]  # `connection`, looked up once
    if db.vendor != "postgresql":
        return db.cursor()
    db.close_if_health_check_failed()  # the health check's own cursor binds on the client
    db.ensure_connection()
    raw = db.connection
    factory = raw.cursor_factory
    raw.cursor_factory = ServerBindingCursor
    try:
        return db.cursor()
    finally:
        raw.cursor_factory = factory


def storable_pk(model, value: int) -> bool:
    """Whether ``value`` fits ``model``'s primary-key column: the ORM matches nothing for an id out of range, a raw
    statement would raise instead (SQLite: OverflowError), so a raw read by an id from a URL asks this first."""
    low, high = connection.ops.integer_field_range(model._meta.pk.get_internal_type())
    return (low is None or value >= low) and (high is None or value <= high)


def table(model) -> str:
    """The model's table name, quoted."""
    return memo(("table", model), lambda: connection.ops.quote_name(model._meta.db_table))


def column(model, name: str) -> str:
    """The column of the model's field ``name``, quoted."""
    return memo(("column", model, name), lambda: connection.ops.quote_name(model._meta.get_field(name).column))


def columns(model, alias: str) -> list[str]:
    """The model's concrete columns under the table alias ``alias``, in field order (read back by :func:`instance`)."""
    return list(
        memo(
            ("columns", model, alias),
            lambda: tuple(
                f"{alias}.{connection.ops.quote_name(field.column)}" for field in model._meta.concrete_fields
            ),
        )
    )


def select(*aliased) -> str:
    """SQL: the :func:`columns` of each ``(model, alias)`` in turn (read back by :func:`instances`)."""
    return memo(("select", aliased), lambda: ", ".join(c for model, alias in aliased for c in columns(model, alias)))


def width(*models) -> int:
    """How many values :func:`columns` selects for these models together."""
    return sum(len(model._meta.concrete_fields) for model in models)


def insert_columns(obj, raw: dict[str, str] | None = None) -> tuple[list[str], list[str], list]:
    """Column names, value expressions and parameters to INSERT the unsaved ``obj`` with raw SQL, prepared
    by the model fields themselves (defaults, ``auto_now_add``, JSON); ``raw`` maps an attname to an SQL
    expression to use instead of a parameter."""
    raw = raw or {}
    qn = connection.ops.quote_name
    columns, exprs, params = [], [], []
    for field in obj._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(qn(field.column))
        if field.attname in raw:
            exprs.append(raw[field.attname])
        else:
            exprs.append("%s")
            params.append(field.get_db_prep_save(field.pre_save(obj, add=True), connection))
    return columns, exprs, params


def saved(obj, pk):
    """``obj`` as the ORM leaves an instance it has just inserted with primary key ``pk``."""
    obj.pk = pk
    obj._state.adding = False
    obj._state.db = connection.alias
    return obj


def instance(model, row, start: int, db=None):
    """The ``model`` instance whose :func:`columns` start at ``row[start]``, every value converted as the ORM
    converts it; ``None`` when its primary key is NULL (an outer join that matched nothing). ``db``: this thread's
    connection, when the caller has it already (``connection`` is a proxy that looks it up on every use)."""
    db = db or connections[DEFAULT_DB_ALIAS]
    attnames, pk_index, converters, plain = _layout(model, db)
    values = list(row[start : start + len(attnames)])
    if values[pk_index] is None:
        return None
    for n, col, convert in converters:
        values[n] = convert(values[n], col, db)
    if not plain:
        return model.from_db(db.alias, attnames, values)
    # what from_db leaves, without Model.__init__'s per-field setattr and its two signals (nobody listens to them)
    obj = model.__new__(model)
    obj.__dict__.update(zip(attnames, values))
    obj._state = state = ModelState()
    state.adding, state.db = False, db.alias
    return obj


def instances(row, models, start: int = 0) -> list:
    """One :func:`instance` per model, their columns side by side from ``row[start]`` (as :func:`select` lists them)."""
    db, out = connections[DEFAULT_DB_ALIAS], []
    for model in models:
        out.append(instance(model, row, start, db))
        start += width(model)
    return out


def column_instances(model, rows, start: int) -> list:
    """The :func:`instance` of ``model`` at ``start`` in each row, leaving out the rows where it is ``None``."""
    db = connections[DEFAULT_DB_ALIAS]
    return [obj for obj in (instance(model, row, start, db) for row in rows) if obj is not None]


# what memo() built, per connection (its operations object: one per connection, so per thread); an entry goes with
# its connection
_MEMO: WeakKeyDictionary = WeakKeyDictionary()


def forget(db=None) -> None:
    """Drop what :func:`memo` built for this thread's connection (after a receiver of ``pre_init`` / ``post_init``
    was connected: a model's layout depends on it)."""
    _MEMO.pop((db or connections[DEFAULT_DB_ALIAS]).ops, None)


def memo(key, build, db=None):
    """``build()``, once per key and connection, kept on the connection's operations object (each thread has its
    own): the SQL text of a name and a model's :func:`_layout` depend on nothing a request changes. ``db``: this
    thread's connection, when the caller has it already."""
    known = _MEMO.setdefault((db or connections[DEFAULT_DB_ALIAS]).ops, {})
    try:
        return known[key]
    except KeyError:
        known[key] = value = build()
        return value


def _layout(model, db) -> tuple[list[str], int, list, bool]:
    """The model's concrete attnames, its primary key's index among them, ``(field index, column, converter)`` for
    the values the ORM converts on this connection, and whether an instance may be built without ``Model.__init__``
    (no receiver of ``pre_init``/``post_init`` for the model, no ``from_db`` of its own, and every field read through
    Django's plain deferred attributes, which keep the value in the instance's ``__dict__``); :func:`memo`-ised."""

    def build():
        fields = model._meta.concrete_fields
        converters = []
        for n, field in enumerate(fields):
            col = field.get_col(model._meta.db_table)
            converters += [
                (n, col, convert) for convert in (*db.ops.get_db_converters(col), *col.get_db_converters(db))
            ]
        plain = (
            not pre_init.has_listeners(model)
            and not post_init.has_listeners(model)
            and model.from_db.__func__ is Model.from_db.__func__
            and all(
                type(getattr(model, f.attname, None)) in (DeferredAttribute, ForeignKeyDeferredAttribute)
                for f in fields
            )
        )
        return [field.attname for field in fields], fields.index(model._meta.pk), converters, plain

    return memo(("layout", model), build, db)
