"""The structure rules of docs/architecture.md, checked on the source tree."""

import ast
import tomllib
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("particles", "effective_theory", "fitting")
OURS = PACKAGES + ("benchmarks", "tests")


def sources(*tops):
    for top in tops:
        yield from sorted((ROOT / top).rglob("*.py"))


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def absolute_imports(node: ast.AST) -> list[str]:
    """The modules an ``import`` or an absolute ``from ... import`` statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        return [node.module]
    return []


def imported_from_ours(node: ast.ImportFrom, path: Path) -> str | None:
    """The module an ``from X import ...`` names when it is one of ours."""
    if node.level:
        return "relative"
    if node.module and node.module.split(".")[0] in OURS:
        return node.module
    return None


def test_no_private_name_crosses_a_module():
    """No ``from ours import _name``, no ``import ours._module`` and no
    ``ours_module._name`` attribute on a module of ours (third-party private
    names, e.g. argparse's, are not ours to fix)."""
    found = []
    for path in sources(*OURS):
        tree = ast.parse(path.read_text())
        modules = set()  # local names bound to modules of ours
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and imported_from_ours(node, path):
                if node.module and any(private(part) for part in node.module.split(".")):
                    found.append(f"{module_of(path)}:{node.lineno} from {node.module}")
                for alias in node.names:
                    if private(alias.name):
                        found.append(f"{module_of(path)}:{node.lineno} imports {alias.name}")
                    modules.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] in OURS:
                        if any(private(part) for part in alias.name.split(".")):
                            found.append(f"{module_of(path)}:{node.lineno} import {alias.name}")
                        modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name)
                    and node.value.id in modules and node.value.id[:1].islower()):
                found.append(f"{module_of(path)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not found, "private names crossing modules:\n" + "\n".join(found)


def test_imports_go_downward_and_torch_stays_in_the_backend():
    wrong = []
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text())
        top = path.relative_to(ROOT).parts[0]
        in_core = path.relative_to(ROOT).parts[:2] == ("particles", "core")
        in_backend = path.relative_to(ROOT).parts[:2] == ("fitting", "training")
        for node in ast.walk(tree):
            for name in absolute_imports(node):
                head = name.split(".")[0]
                if top == "particles" and head in ("effective_theory", "fitting"):
                    wrong.append(f"{module_of(path)} imports {name}")
                if top == "effective_theory" and head == "fitting":
                    wrong.append(f"{module_of(path)} imports {name}")
                if in_core and head == "particles" and not name.startswith("particles.core"):
                    wrong.append(f"{module_of(path)} (core) imports {name}")
                if head == "torch" and not in_backend:
                    wrong.append(f"{module_of(path)} imports torch")
            if in_core and isinstance(node, ast.ImportFrom) and node.level >= 2:
                wrong.append(f"{module_of(path)} (core) imports from particles above it")
    assert not wrong, "\n".join(wrong)


def test_the_web_stack_stays_in_the_explorer():
    """Starlette, Uvicorn and websockets (the [explore] extra) are imported only inside
    fitting.explore, and no other module of the packages imports fitting.explore."""
    wrong = []
    for path in sources(*PACKAGES):
        parts = path.relative_to(ROOT).parts
        in_explore = parts[:2] == ("fitting", "explore")
        for node in ast.walk(ast.parse(path.read_text())):
            for name in absolute_imports(node):
                if name.split(".")[0] in ("starlette", "uvicorn", "websockets") and not in_explore:
                    wrong.append(f"{module_of(path)} imports {name}")
                if name.startswith("fitting.explore") and not in_explore:
                    wrong.append(f"{module_of(path)} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_every_command_is_an_entry_point_and_no_module_is_named_in_a_string():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    commands = project["project"]["entry-points"]["embdyn.commands"]
    import argparse

    from particles.core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(commands)
    for path in sources("particles/core"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not any(node.value.startswith(p + ".") for p in ("effective_theory", "fitting")), \
                    f"{module_of(path)} names {node.value!r}"


def test_no_function_longer_than_100_lines():
    long = set()
    for path in sources(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 100:
                long.add(f"{module_of(path)}.{node.name}")
    assert not long, f"functions longer than 100 lines: {sorted(long)}"


def test_library_code_prints_nothing():
    """Only the command modules (``cli.py``) print; the library reports
    through return values, warnings and ``callback`` arguments."""
    printing = []
    for path in sources(*PACKAGES):
        if path.name == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                printing.append(f"{module_of(path)}:{node.lineno}")
    assert not printing, "print() outside the command modules: " + ", ".join(printing)
