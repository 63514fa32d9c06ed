"""The items of a HIT and of an assignment (the HIT's items with the interleaved gold items), read in one statement
(:mod:`annotation.rawsql`) and joined into the allocation's and the submission's own statements."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from .. import rawsql
from ..models import HIT, Assignment, HITItem, Item


def hit_items(hit_id: int) -> list[Item]:
    """The items of a HIT, in their order in it."""
    sql = (
        f"SELECT {rawsql.select((Item, 'i'))} FROM {rawsql.table(HIT)} h {hit_items_join('h.id')} "
        f"WHERE h.id = %s {in_hit_order()}"
    )
    with rawsql.cursor() as cursor:
        cursor.execute(sql, [hit_id])
        return joined_items(cursor.fetchall(), 0)


def joined_items(rows, start: int) -> list[Item]:
    """The items a :func:`hit_items_join` added to ``rows`` (their columns from ``row[start]``), a HIT without any
    read as none."""
    return rawsql.column_instances(Item, rows, start)


def in_hit_order() -> str:
    """SQL: ``ORDER BY`` the items a :func:`hit_items_join` added in their order in the HIT."""
    return f"ORDER BY hi.{rawsql.column(HITItem, 'position')}, hi.id"


def hit_items_join(hit_id_sql: str) -> str:
    """SQL: ``LEFT JOIN`` the HIT items (alias ``hi``) and items (``i``) of the HIT whose id is ``hit_id_sql``."""
    return (
        f"LEFT JOIN {rawsql.table(HITItem)} hi ON hi.{rawsql.column(HITItem, 'hit')} = {hit_id_sql} "
        f"LEFT JOIN {rawsql.table(Item)} i ON i.id = hi.{rawsql.column(HITItem, 'item')}"
    )


@dataclass(frozen=True)
class ItemsRead:
    """What is known already of an assignment's items (fixed once the assignment exists): its HIT's items in their
    order, read with the assignment or by the reservation that took the HIT; the ids of the gold items interleaved
    into it; and the list :func:`assignment_items` built from them. ``None``: not read yet."""

    hit_items: list[Item] | None = None
    gold_ids: list[int] | None = None
    items: list[Item] | None = None


def items_read(assignment: Assignment) -> ItemsRead:
    """What :func:`remember` kept on this assignment object (an empty :class:`ItemsRead` when nothing)."""
    return assignment.items_read or ItemsRead()


def remember(assignment: Assignment, **known) -> Assignment:
    """Keep on the assignment object what a read or a reservation learnt of its items (fields of :class:`ItemsRead`;
    its public ``items_read`` attribute), so that :func:`assignment_items` and a submission do not read them again."""
    assignment.items_read = replace(items_read(assignment), **known)
    return assignment


def assignment_items(assignment: Assignment) -> list[Item]:
    """The HIT's items with the interleaved gold items, in an order that is stable for this assignment.

    Both are fixed once the assignment exists, so the list is kept on the instance (:func:`remember`; handed on to
    :func:`annotation.services.submit_assignment`, which then does not read them again).
    """
    known = items_read(assignment)
    if known.items is not None:
        return list(known.items)
    items = hit_items(assignment.hit_id) if known.hit_items is None else list(known.hit_items)
    if known.gold_ids is None:
        gold = list(assignment.gold_items.order_by("pk"))
    else:
        gold = list(Item.objects.filter(pk__in=known.gold_ids).order_by("pk")) if known.gold_ids else []
    if gold:
        rng = random.Random(assignment.pk)
        for g in gold:
            items.insert(rng.randint(0, len(items)), g)
    remember(assignment, items=items)
    return list(items)
