#!/usr/bin/env python3
"""The layout rules of Argora, checked on the source (no Django needed). Run from anywhere:

    python scripts/check_layout.py          # prints what breaks a rule; exit 1 if anything does

Rules (see DESIGN.md, "Layout"):
1. One task type = one package ``annotation/task_types/<name>/`` (a ``task_type.py`` registering the type ``<name>``).
   The engine -- ``annotation/`` outside ``task_types/``, ``corpus/``, ``argora/`` -- never names a task type (no
   ``"<name>"`` in its text; an app's demo data, ``demo.py``, may) and never imports a task type package (a task
   type's models, migrations and management commands live in its package, a Django app of its own).
2. Layers: ``argora`` <- ``corpus`` <- ``annotation`` <- ``ml`` / ``mturk`` / ``prolific``: an app imports only itself
   and the apps below it (``ml``, ``mturk`` and ``prolific`` do not import each other).
3. No app imports, or reads as an attribute, another app's ``_private`` names.
4. Imports of project modules written inside functions stay under 60, and each says why on its line (a comment:
   a real import cycle or a start-up cost).
5. Every database write of ``annotation/`` (engine and task types: ``save``, ``delete``, a queryset's ``update`` /
   ``delete`` / ``create``, ``bulk_*``, ``get_or_create``, ``update_or_create``, INSERT / UPDATE / DELETE SQL) is in
   a service module that README.md lists (its service-modules block, one line per module and its concern); a model
   may override ``save`` (``super().save()``). Views, forms, admin, API, selectors and commands call those modules.
6. No import circle between the files of one app (module-level and function-level imports, not ``TYPE_CHECKING``
   ones), except a Celery ``tasks`` module and a module it calls that queues it back.
7. No module of ``annotation/`` is over 600 lines.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("argora", "corpus", "annotation", "ml", "mturk", "prolific")
BELOW = {
    "argora": set(),
    "corpus": {"argora"},
    "annotation": {"argora", "corpus"},
    "ml": {"argora", "corpus", "annotation"},
    "mturk": {"argora", "corpus", "annotation"},
    "prolific": {"argora", "corpus", "annotation"},
}
SKIP_PARTS = {"migrations", "__pycache__"}
LOCAL_IMPORT_LIMIT = 60


def source_files() -> list[Path]:
    return sorted(p for app in APPS for p in (ROOT / app).rglob("*.py") if not SKIP_PARTS & set(p.parts))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom reads from."""
    if not node.level:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def task_type_names() -> dict[str, Path]:
    """``{name: package folder}`` for every package under annotation/task_types with a task_type module."""
    return {p.parent.name: p.parent for p in sorted((ROOT / "annotation" / "task_types").glob("*/task_type.py"))}


def registered_names(task_type_file: Path) -> set[str]:
    """The ``name = "..."`` of the TaskType classes in a task_type module (constants followed one step)."""
    tree = ast.parse(task_type_file.read_text(encoding="utf-8"))
    package = ast.parse((task_type_file.parent / "__init__.py").read_text(encoding="utf-8"))
    consts = {
        t.id: n.value.value
        for n in package.body + tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
    }
    names = set()
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "name" for t in stmt.targets):
                value = stmt.value
                if isinstance(value, ast.Constant):
                    names.add(value.value)
                elif isinstance(value, ast.Name) and value.id in consts:
                    names.add(consts[value.id])
    return names


def is_engine(rel: Path) -> bool:
    """Engine files; an app's ``demo.py`` (its demo data for ``make demo``) may name the task type it demonstrates."""
    parts = rel.parts
    return rel.name != "demo.py" and (
        parts[0] in ("corpus", "argora") or (parts[0] == "annotation" and "task_types" not in parts)
    )


# --- rule 5: every write of annotation/ (engine and task types) in a named service module ---------------------------
# The list of service modules is README.md's block between these markers: one line per module, "- `path`: concern",
# a path without ".py" naming a module or a package (``annotation/services`` is services.py or services/).
SERVICE_BLOCK = ("<!-- service-modules -->", "<!-- /service-modules -->")
WRITE_SCOPE = ("annotation",)
ORM_WRITES = {"update", "delete", "create", "bulk_create", "bulk_update", "get_or_create", "update_or_create"}
ALWAYS_WRITES = {"bulk_create", "bulk_update", "get_or_create", "update_or_create"}
RELATED_WRITES = {"create", "add", "remove", "clear", "set"}  # on a related manager: ``a.b.<method>(...)``
QUERYSET_STEPS = {
    "objects",
    "filter",
    "exclude",
    "all",
    "select_for_update",
    "using",
    "order_by",
    "only",
    "defer",
    "select_related",
    "prefetch_related",
    "annotate",
    "values",
    "distinct",
    "none",
    "get_queryset",
    "_base_manager",
    "_default_manager",
}
SQL_WRITE = re.compile(r"^\s*(WITH\b.*?\)\s*)?(INSERT|UPDATE|DELETE|MERGE)\b", re.I | re.S)


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once for all the rules."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def service_modules(readme: Path | None = None) -> dict[str, str]:
    """``{path: concern}`` from README.md's service-modules block (the one list the docs and this check share)."""
    path = readme or ROOT / "README.md"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    start, end = text.find(SERVICE_BLOCK[0]), text.find(SERVICE_BLOCK[1])
    if start < 0 or end < start:
        return {}
    found = re.findall(r"^\s*-\s+`([\w/.]+)`\s*[:\u2014-]\s*(.+)$", text[start:end], flags=re.M)
    return {path.removesuffix(".py").rstrip("/"): concern.strip() for path, concern in found}


def is_service_module(rel: Path, modules: dict[str, str]) -> bool:
    path = rel.with_suffix("").as_posix()
    return any(path == m or path.startswith(m + "/") for m in modules)


def _receiver_chain(node: ast.AST) -> list[str]:
    """``Item.objects.filter(...).update`` -> ``["Item", "objects", "filter"]`` (calls skipped)."""
    names = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        else:
            if isinstance(node, ast.Name):
                names.append(node.id)
            return names[::-1]


def _text(node: ast.AST, consts: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return (_text(node.left, consts) or "") + (_text(node.right, consts) or "")
    return None


def orm_writes(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, what)`` of each database write in a module: ``x.save()`` / ``x.delete()`` (not ``super()``'s, which
    is a model's own override), a queryset's ``update`` / ``delete`` / ``create``, ``bulk_create`` / ``bulk_update``
    / ``get_or_create`` / ``update_or_create``, a related manager's ``create`` / ``add`` / ``remove`` / ``clear`` /
    ``set`` (``a.b.add(...)``: two names before it), and ``execute`` of INSERT / UPDATE / DELETE SQL."""
    consts = {
        n.targets[0].id: s
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.targets[0], ast.Name)
        and (s := _text(n.value, {})) is not None
    }
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method, chain = node.func.attr, _receiver_chain(node.func.value)
        where = ".".join(chain + [method])
        saves = method in ("save", "delete") and bool(chain) and chain[0] != "super" and chain[-1] not in QUERYSET_STEPS
        on_queryset = method in ORM_WRITES and bool(QUERYSET_STEPS & set(chain))
        on_related = method in RELATED_WRITES and len(chain) >= 2  # project.items.create(...), hit.items.add(...)
        if saves or on_queryset or on_related or method in ALWAYS_WRITES:
            found.append((node.lineno, where))
        elif method == "execute" and node.args and SQL_WRITE.search(_text(node.args[0], consts) or ""):
            found.append((node.lineno, f"{where} of {SQL_WRITE.search(_text(node.args[0], consts)).group(2)} SQL"))
    return sorted(found)


def check_writes(files: list[Path], modules: dict[str, str]) -> list[str]:
    problems = []
    if not modules:
        return [f"README.md: no service-modules block ({SERVICE_BLOCK[0]} ... {SERVICE_BLOCK[1]})"]
    for module in sorted(modules):
        if not (ROOT / f"{module}.py").is_file() and not (ROOT / module).is_dir():
            problems.append(f"README.md: the service module {module} does not exist")
    for path in files:
        rel = path.relative_to(ROOT)
        if rel.parts[0] not in WRITE_SCOPE or is_service_module(rel, modules):
            continue
        for line, what in orm_writes(parsed(path)):
            problems.append(f"{rel}:{line}: a database write ({what}) outside the service modules README.md lists")
    return problems


# --- rule 6: no import circle between files of one app, except a Celery task module <-> its service ---------------
def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs (module level or in a function), not those under ``if TYPE_CHECKING:``."""
    nodes = list(ast.walk(tree))
    skipped = {
        id(sub)
        for n in nodes
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n.test)
        for stmt in n.body
        for sub in ast.walk(stmt)
    }
    return [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped]


def import_graph(files: list[Path]) -> dict[str, dict[str, int]]:
    """``{module: {module it imports, of the same app: line}}``; ``from pkg import x`` names the submodule
    ``pkg.x`` where there is one, else ``pkg``."""
    modules = {module_name(p): p for p in files}
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for name, path in modules.items():
        app = name.split(".")[0]
        for node in _runtime_imports(parsed(path)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = resolve(path, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] == app:
                    graph[name].setdefault(target, node.lineno)
    return graph


def _is_task_pair(a: str, b: str) -> bool:
    """A Celery task module (``tasks``) and a module it calls that queues it back: the one circle allowed."""
    return a.rpartition(".")[2] == "tasks" or b.rpartition(".")[2] == "tasks"


def import_cycles(graph: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """The strongly connected groups of more than one module (Tarjan), after dropping the task <-> service pairs;
    each as one shortest circle through its first module, then the group's other members."""
    edges = {
        a: {b for b in targets if not (a in graph.get(b, {}) and _is_task_pair(a, b))} for a, targets in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    circles = []
    for group in sorted(groups):
        members, start = set(group), group[0]
        paths, seen, circle = {start: [start]}, {start}, None
        queue = [start]
        while queue and circle is None:
            v = queue.pop(0)
            for w in sorted(edges[v] & members):
                if w == start:
                    circle = paths[v] + [start]
                    break
                if w not in seen:
                    seen.add(w)
                    paths[w] = paths[v] + [w]
                    queue.append(w)
        circle = circle or group + [start]
        circles.append((circle, sorted(members - set(circle))))
    return circles


def check_cycles(files: list[Path]) -> list[str]:
    problems = []
    graph = import_graph(files)
    for circle, others in import_cycles(graph):
        steps = " -> ".join(f"{b} ({modules_path(a)}:{graph[a][b]})" for a, b in itertools.pairwise(circle))
        rest = f"; also in the circle: {', '.join(others)}" if others else ""
        problems.append(f"{circle[0].split('.')[0]}: import circle {circle[0]} -> {steps}{rest}")
    return problems


def modules_path(module: str) -> str:
    path = ROOT / Path(*module.split("."))
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(ROOT))


# --- rule 7: no module of annotation/ over MAX_MODULE_LINES lines --------------------------------------------------
MAX_MODULE_LINES = 600
LENGTH_SCOPE = ("annotation",)


def check_lengths(files: list[Path]) -> list[str]:
    problems = []
    for path in files:
        rel = path.relative_to(ROOT)
        if rel.parts[0] in LENGTH_SCOPE:
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > MAX_MODULE_LINES:
                problems.append(
                    f"{rel}: {n} lines (a module of {rel.parts[0]}/ has at most {MAX_MODULE_LINES}; "
                    f"split it by concern)"
                )
    return problems


def check() -> tuple[list[str], dict]:
    problems: list[str] = []
    names = task_type_names()
    for name, folder in names.items():
        found = registered_names(folder / "task_type.py")
        if found != {name}:
            problems.append(
                f"{folder.relative_to(ROOT)}/task_type.py: registers {sorted(found)}, expected "
                f"[{name!r}] (the package is named after its task type)"
            )
    quoted = re.compile(r"[\"'](" + "|".join(map(re.escape, names)) + r")[\"']") if names else None
    local, unexplained = 0, []
    for path in source_files():
        rel = path.relative_to(ROOT)
        text = path.read_text(encoding="utf-8")
        tree = parsed(path)
        lines = text.splitlines()
        app = rel.parts[0]
        engine = is_engine(rel)
        if engine and quoted is not None:
            for number, line in enumerate(lines, 1):
                m = quoted.search(line)
                if m:
                    problems.append(f"{rel}:{number}: the engine names the task type {m.group(1)!r}")
        imported_from: dict[str, str] = {}  # local name -> app of the module it names
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_function = {
            id(sub) for f in functions for sub in ast.walk(f) if isinstance(sub, (ast.Import, ast.ImportFrom))
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = resolve(path, node)
                pairs = [(target, a) for a in node.names]
            elif isinstance(node, ast.Import):
                pairs = [(a.name, a) for a in node.names]
            else:
                continue
            for target, alias in pairs:
                dep = target.split(".")[0]
                if dep not in APPS:
                    continue
                if dep != app and dep not in BELOW[app]:
                    problems.append(f"{rel}:{node.lineno}: {app} imports {target} ({dep} is not below {app})")
                if engine and target.startswith("annotation.task_types.") and target.split(".")[2] in names:
                    problems.append(f"{rel}:{node.lineno}: the engine imports the task type package {target}")
                if dep != app and isinstance(node, ast.ImportFrom) and alias.name.startswith("_"):
                    problems.append(f"{rel}:{node.lineno}: imports the private name {alias.name} of {target}")
                bound = alias.asname or alias.name.split(".")[0]
                imported_from[bound] = dep
            if id(node) in in_function and any(t.split(".")[0] in APPS for t, _ in pairs):
                local += 1
                if "#" not in lines[node.lineno - 1]:
                    unexplained.append(f"{rel}:{node.lineno}")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                dep = imported_from.get(node.value.id)
                if dep is not None and dep != app:
                    problems.append(
                        f"{rel}:{node.lineno}: reads the private name {node.value.id}.{node.attr} of another app"
                    )
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
            ):
                dep = imported_from.get(node.args[0].id)
                if dep is not None and dep != app:
                    problems.append(
                        f"{rel}:{node.lineno}: getattr of the private name {node.args[1].value!r} of another app"
                    )
    if local >= LOCAL_IMPORT_LIMIT:
        problems.append(f"{local} function-local imports of project modules (the limit is {LOCAL_IMPORT_LIMIT})")
    problems += [
        f"{where}: a function-local import of a project module without a comment saying why" for where in unexplained
    ]
    files = source_files()
    problems += check_writes(files, service_modules())
    problems += check_cycles(files)
    problems += check_lengths(files)
    return problems, {"task_types": sorted(names), "local_imports": local}


def main() -> int:
    problems, figures = check()
    for line in problems:
        print(line)
    print(
        f"layout: {len(figures['task_types'])} task types ({', '.join(figures['task_types'])}); "
        f"{figures['local_imports']} function-local project imports; {len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
