#!/usr/bin/env python3
"""The layout rules of Argora, checked on the source (no Django needed). Run from anywhere:

    python scripts/check_layout.py          # prints what breaks a rule; exit 1 if anything does

Rules (see DESIGN.md, "Layout"):
1. One task type = one package ``annotation/task_types/<name>/`` (a ``task_type.py`` registering the type ``<name>``).
   The engine -- ``annotation/`` outside ``task_types/``, ``corpus/``, ``argora/`` -- never names a task type (no
   ``"<name>"`` in its text; an app's demo data, ``demo.py``, may) and never imports a task type package, except the one-line
   management commands in ``annotation/management/commands/`` that re-export a package's ``cli.Command`` (Django
   finds commands only there).
2. Layers: ``argora`` <- ``corpus`` <- ``annotation`` <- ``ml`` / ``mturk`` / ``prolific``: an app imports only itself
   and the apps below it (``ml``, ``mturk`` and ``prolific`` do not import each other).
3. No app imports, or reads as an attribute, another app's ``_private`` names.
4. Imports of project modules written inside functions stay under 60, and each says why on its line (a comment:
   a real import cycle or a start-up cost).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("argora", "corpus", "annotation", "ml", "mturk", "prolific")
BELOW = {"argora": set(), "corpus": {"argora"}, "annotation": {"argora", "corpus"},
         "ml": {"argora", "corpus", "annotation"}, "mturk": {"argora", "corpus", "annotation"},
         "prolific": {"argora", "corpus", "annotation"}}
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
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def task_type_names() -> dict[str, Path]:
    """``{name: package folder}`` for every package under annotation/task_types with a task_type module."""
    return {p.parent.name: p.parent for p in sorted((ROOT / "annotation" / "task_types").glob("*/task_type.py"))}


def registered_names(task_type_file: Path) -> set[str]:
    """The ``name = "..."`` of the TaskType classes in a task_type module (constants followed one step)."""
    tree = ast.parse(task_type_file.read_text(encoding="utf-8"))
    package = ast.parse((task_type_file.parent / "__init__.py").read_text(encoding="utf-8"))
    consts = {t.id: n.value.value for n in package.body + tree.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
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
    return rel.name != "demo.py" and (parts[0] in ("corpus", "argora")
                                      or (parts[0] == "annotation" and "task_types" not in parts))


def is_command_shim(rel: Path, tree: ast.Module) -> bool:
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return (rel.parts[:3] == ("annotation", "management", "commands") and len(body) == 1
            and isinstance(body[0], ast.ImportFrom) and (body[0].module or "").startswith("annotation.task_types.")
            and body[0].module.endswith(".cli") and [a.name for a in body[0].names] == ["Command"])


def check() -> tuple[list[str], dict]:
    problems: list[str] = []
    names = task_type_names()
    for name, folder in names.items():
        found = registered_names(folder / "task_type.py")
        if found != {name}:
            problems.append(f"{folder.relative_to(ROOT)}/task_type.py: registers {sorted(found)}, expected "
                            f"[{name!r}] (the package is named after its task type)")
    quoted = re.compile(r"[\"'](%s)[\"']" % "|".join(map(re.escape, names))) if names else None
    local, unexplained = 0, []
    for path in source_files():
        rel = path.relative_to(ROOT)
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(rel))
        lines = text.splitlines()
        app = rel.parts[0]
        engine = is_engine(rel)
        if engine and quoted is not None:
            for number, line in enumerate(lines, 1):
                m = quoted.search(line)
                if m:
                    problems.append(f"{rel}:{number}: the engine names the task type {m.group(1)!r}")
        shim = is_command_shim(rel, tree)
        imported_from: dict[str, str] = {}  # local name -> app of the module it names
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        in_function = {id(sub) for f in functions for sub in ast.walk(f)
                       if isinstance(sub, (ast.Import, ast.ImportFrom))}
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
                if engine and target.startswith("annotation.task_types.") and not shim \
                        and target.split(".")[2] in names:
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
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                dep = imported_from.get(node.value.id)
                if dep is not None and dep != app:
                    problems.append(f"{rel}:{node.lineno}: reads the private name {node.value.id}.{node.attr} "
                                    f"of another app")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) \
                    and isinstance(node.args[1], ast.Constant) and str(node.args[1].value).startswith("_"):
                dep = imported_from.get(node.args[0].id)
                if dep is not None and dep != app:
                    problems.append(f"{rel}:{node.lineno}: getattr of the private name {node.args[1].value!r} "
                                    f"of another app")
    if local >= LOCAL_IMPORT_LIMIT:
        problems.append(f"{local} function-local imports of project modules (the limit is {LOCAL_IMPORT_LIMIT})")
    problems += [f"{where}: a function-local import of a project module without a comment saying why"
                 for where in unexplained]
    return problems, {"task_types": sorted(names), "local_imports": local}


def main() -> int:
    problems, figures = check()
    for line in problems:
        print(line)
    print(f"layout: {len(figures['task_types'])} task types ({', '.join(figures['task_types'])}); "
          f"{figures['local_imports']} function-local project imports; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
