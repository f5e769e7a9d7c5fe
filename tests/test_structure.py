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


#: the subpackages of ``fitting`` and the others each may import (docs/architecture.md); ``signals`` is the
#: shared base; ``fitting``'s top level holds only ``__init__.py`` (no modules, no old names)
FITTING_LAYERS = {
    "signals": set(),
    "ode": {"signals"},
    "survival": {"signals", "ode"},
    "training": {"signals"},
    "forcefit": {"signals", "ode"},
    "demo": {"signals", "ode", "survival"},
    "explore": {"signals", "ode", "forcefit"},
}
#: the modules renamed in 0.1 (docs/changelog.md, Removed): gone, with no module or forwarding name left behind
OLD_MODULES = ["fitting.analysis", "fitting.backend", "fitting.cli", "fitting.derivatives", "fitting.examples",
               "fitting.force_law", "fitting.frequencies", "fitting.plot", "fitting.report", "fitting.ode.models",
               "particles.validation"]
#: the re-exports renamed in 0.1, gone from the module that had them: (module, old name)
OLD_RE_EXPORTS = [("particles.simulate", "package_version"), ("particles.trajectory", "atomic_write_text"),
                  ("particles.trajectory", "remove_stale_temporaries")]


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``, at module
    level or inside functions (relative imports resolved; ``from X import
    name`` gives X.name as well, as it may be a submodule)."""
    package = module_of(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_of(path)[:-9]
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            out.append((node.lineno, name))
            out += [(node.lineno, f"{name}.{a.name}") for a in node.names]
    return out


def test_fitting_subpackages_import_only_the_layers_below_them():
    wrong = []
    for path in sources("fitting"):
        parts = path.relative_to(ROOT).parts
        if len(parts) < 3 or parts[1] not in FITTING_LAYERS:
            continue
        own = parts[1]
        for line, name in imported_modules(path):
            bits = name.split(".")
            if bits[0] != "fitting" or len(bits) < 2 or bits[1] == own:
                continue
            if (ROOT / "fitting" / bits[1]).is_dir() and bits[1] in FITTING_LAYERS:
                if bits[1] not in FITTING_LAYERS[own]:
                    wrong.append(f"{module_of(path)}:{line} imports {name} (fitting.{own} may import "
                                 f"{sorted(FITTING_LAYERS[own]) or 'no other subpackage'})")
            elif (ROOT / "fitting" / f"{bits[1]}.py").exists():
                wrong.append(f"{module_of(path)}:{line} imports {name}, a module at fitting's top level")
    assert not wrong, "\n".join(wrong)


def test_fitting_top_level_holds_only_its_init_and_the_subpackages():
    modules = {p.name for p in (ROOT / "fitting").glob("*.py")}
    folders = {p.name for p in (ROOT / "fitting").iterdir() if p.is_dir() and p.name != "__pycache__"
               and not p.name.startswith(".")}
    assert modules == {"__init__.py"}, f"modules at fitting's top level: {sorted(modules - {'__init__.py'})}"
    assert folders == set(FITTING_LAYERS), f"folders at fitting's top level: {sorted(folders)}"


def test_the_old_names_are_gone():
    """The names renamed in 0.1 import as nothing: no module, no package, no
    forwarding module ``__getattr__`` (docs/changelog.md lists what replaced them)."""
    import importlib
    import importlib.util

    assert [n for n in OLD_MODULES if importlib.util.find_spec(n) is not None] == []
    assert [f"{m}.{n}" for m, n in OLD_RE_EXPORTS if hasattr(importlib.import_module(m), n)] == []
    changelog = (ROOT / "docs" / "changelog.md").read_text()
    named = OLD_MODULES + [f"{m}.{n}" for m, n in OLD_RE_EXPORTS]
    assert [n for n in named if f"`{n}`" not in changelog] == [], "old names the changelog does not list"


def test_no_import_circle():
    """No circle among the modules of the packages, counting imports inside
    functions too (they only defer the circle)."""
    graph: dict[str, set[str]] = {}
    names = {module_of(p)[:-9] if p.name == "__init__.py" else module_of(p): p for p in sources(*PACKAGES)}
    for name, path in names.items():
        graph[name] = set()
        for _, target in imported_modules(path):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)  # a package's own __init__ running first is not a circle
    # Tarjan's strongly connected components
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_no_dispatch_on_a_type_name():
    """Kinds of objects are told apart by isinstance or by what they declare,
    never by a class name in a string (``type(x).__name__ == "..."``)."""
    found = []
    for path in sources(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    if (isinstance(side, ast.Attribute) and side.attr == "__name__" and isinstance(side.value, ast.Call)
                            and isinstance(side.value.func, ast.Name) and side.value.func.id == "type"):
                        found.append(f"{module_of(path)}:{node.lineno}")
    assert not found, "type-name dispatch: " + ", ".join(found)


def test_no_module_warns_at_import():
    """Every module of the packages imports without a DeprecationWarning (a
    deprecated name used inside the package warns every user at import),
    checked in a fresh process; modules that need a missing optional extra
    (torch, the web stack) are left out."""
    import subprocess
    import sys

    names = [module_of(p)[:-9] if p.name == "__init__.py" else module_of(p) for p in sources(*PACKAGES)]
    names = [n for n in names if "__main__" not in n]
    code = ("import importlib, sys, warnings\nwarnings.simplefilter('error', DeprecationWarning)\nbad = []\n"
            f"for name in {names!r}:\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except ImportError as exc:\n"
            "        if (exc.name or '').split('.')[0] not in ('torch', 'starlette', 'uvicorn', 'websockets', 'selenium'):\n"
            "            bad.append(f'{name}: {exc!r}')\n"
            "    except DeprecationWarning as exc:\n        bad.append(f'{name}: {exc}')\n"
            "print('\\n'.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert not out.stdout.strip(), "modules that warn at import:\n" + out.stdout


#: the concrete classes of the pluggable parts: behaviour is declared on them, never switched on by class
CONCRETE_PARTS = ("WeakForm", "FlowMap", "FiniteDifference", "SavitzkyGolay", "ForceParams", "PairEnergy",
                  "EffectiveLoss", "Lasso", "LassoCV", "STLSQ", "OLS", "_SkLasso")
#: isinstance checks on them that are input validation or operator dispatch, not behaviour switches
ISINSTANCE_ALLOWED = {("particles/pair_energy.py", "PairEnergy"),   # __add__ of two PairEnergy terms
                      ("particles/effective.py", "EffectiveLoss"),  # an EffectiveLoss or a PairDataset argument
                      ("fitting/explore/live.py", "ForceParams")}   # the Live tab's sliders are its fields


def test_no_isinstance_switch_on_formulations_regressors_or_laws():
    """Issue 70: formulations, regressors and laws declare what they do (kind, maps_states,
    covariance_refit, translation_invariant, simulates, ...); nothing tells them apart by class."""
    import ast

    found = []
    for package in ("particles", "fitting", "effective_theory"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                    names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    names |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                    rel = str(path.relative_to(ROOT))
                    for name in names & set(CONCRETE_PARTS):
                        if (rel, name) not in ISINSTANCE_ALLOWED:
                            found.append(f"{rel}:{node.lineno} isinstance(..., {name})")
    assert not found, "\n".join(found)


#: the most parameters an exported kernel takes (docs/architecture.md: arguments travel in typed records)
MAX_KERNEL_PARAMETERS = 6


def kernel_parameter_counts(path: Path, imported: set[str]) -> dict[str, int]:
    """The functions of a kernel module that other modules call: named in
    its ``__all__`` (a literal list) or in ``imported`` (imported by name
    from it elsewhere: a helper called from another module is not private),
    and how many parameters each takes (positional, keyword-only, ``*args``
    and ``**kwargs`` counted once each)."""
    tree = ast.parse(path.read_text())
    exported = set(imported)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exported |= set(ast.literal_eval(node.value))
    counts = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in exported:
            a = node.args
            counts[node.name] = (len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None)
                                 + (a.kwarg is not None))
    return counts


def test_no_exported_kernel_takes_more_than_six_arguments():
    """Issue 70, item 8: every function in the ``__all__`` of a module of
    particles/kernels, or imported from it by another module, takes at most
    six parameters; the others travel in typed records
    (particles/kernels/records.py, the modules' NamedTuples)."""
    folder = ROOT / "particles" / "kernels"
    imported: dict[str, set[str]] = {}  # kernel module -> names other modules import from it
    for path in sources("particles", "tests", "benchmarks"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1 and path.parent == folder:
                module = node.module
            elif not node.level and (node.module or "").startswith("particles.kernels."):
                module = node.module.removeprefix("particles.kernels.")
            else:
                continue
            if module and (folder / f"{module}.py").is_file() and path != folder / f"{module}.py":
                imported.setdefault(module, set()).update(alias.name for alias in node.names)
    found = []
    for path in sorted(folder.glob("*.py")):
        for name, count in kernel_parameter_counts(path, imported.get(path.stem, set())).items():
            if count > MAX_KERNEL_PARAMETERS:
                found.append(f"{module_of(path)}.{name}: {count}")
    assert not found, "exported kernels with more than six arguments:\n" + "\n".join(found)
