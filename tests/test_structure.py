"""The structure rules of docs/architecture.md, checked on the source tree."""

import ast
import re
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
    "explore": {"signals", "ode", "forcefit", "sandbox"},
    "sandbox": {"signals"},
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


#: the base classes of the pluggable parts of the ODE fit: their subclasses declare what they do
#: (fitting/ode/differentiation.py, fitting/ode/regression.py)
PART_BASES = ("Formulation", "Regressor")
#: a force law declares the protocol's class-level names (particles/law_protocol.py); a class of the
#: packages that assigns all of these in its body is a law
LAW_DECLARATIONS = ("pair_terms", "tied_terms", "simulates", "cell_lists")
#: the concrete classes the derivation must find (the ones there are today), so that it cannot come back empty
KNOWN_PARTS = ("WeakForm", "FlowMap", "FiniteDifference", "SavitzkyGolay", "ForceParams", "PairEnergy",
               "EffectiveLoss", "Lasso", "LassoCV", "STLSQ", "OLS")
#: imported classes a part wraps, named here by the alias the package gives them
WRAPPED_PARTS = ("_SkLasso",)
#: isinstance checks on them that are input validation or operator dispatch, not behaviour switches
ISINSTANCE_ALLOWED = {("particles/pair_energy.py", "PairEnergy"),   # __add__ of two PairEnergy terms
                      ("particles/effective.py", "EffectiveLoss"),  # an EffectiveLoss or a PairDataset argument
                      ("fitting/explore/live.py", "ForceParams")}   # the Live tab's sliders are its fields


def concrete_parts() -> set[str]:
    """The classes nothing may switch on, found in the source: every class
    of the packages derived (at any depth) from a :data:`PART_BASES` class,
    and every class whose body declares all of :data:`LAW_DECLARATIONS`."""
    bases: dict[str, set[str]] = {}
    laws = set()
    for path in sources(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases.setdefault(node.name, set()).update(b.id if isinstance(b, ast.Name) else b.attr
                                                      for b in node.bases if isinstance(b, (ast.Name, ast.Attribute)))
            assigned = {t.id for stmt in node.body if isinstance(stmt, ast.Assign) for t in stmt.targets
                        if isinstance(t, ast.Name)}
            if set(LAW_DECLARATIONS) <= assigned:
                laws.add(node.name)
    parts = set()
    grown = True
    while grown:
        new = {name for name, up in bases.items() if up & (parts | set(PART_BASES))} - parts
        grown = bool(new)
        parts |= new
    return parts | laws


def class_switches(tree: ast.AST, parts: set[str]) -> list[tuple[int, str, str]]:
    """(line, class, how) of every place that tells ``parts`` apart by class:
    ``isinstance`` / ``issubclass`` naming one, ``type(x) is / == / in`` one,
    and a ``case`` pattern of one."""
    def named(node: ast.AST) -> set[str]:
        return ({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}) & parts

    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("isinstance", "issubclass")
                and len(node.args) == 2):
            found += [(node.lineno, name, node.func.id) for name in named(node.args[1])]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(x, ast.Call) and getattr(x.func, "id", None) == "type" for x in sides):
                found += [(node.lineno, name, "type()") for x in sides if not isinstance(x, ast.Call)
                          for name in named(x)]
        elif isinstance(node, ast.MatchClass):
            found += [(node.lineno, name, "case") for name in named(node.cls)]
    return found


def test_no_isinstance_switch_on_formulations_regressors_or_laws():
    """Issue 70: formulations, regressors and laws declare what they do (kind, maps_states,
    covariance_refit, translation_invariant, simulates, ...); nothing tells them apart by class.
    The classes are found in the source (a new formulation, regressor or law is covered without
    being listed), and every allowed exception is still needed."""
    parts = concrete_parts()
    assert set(KNOWN_PARTS) <= parts, f"the derivation missed {sorted(set(KNOWN_PARTS) - parts)}"
    parts |= set(WRAPPED_PARTS)
    found, used = [], set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for line, name, how in class_switches(ast.parse(path.read_text()), parts):
                if (rel, name) in ISINSTANCE_ALLOWED and how == "isinstance":
                    used.add((rel, name))
                else:
                    found.append(f"{rel}:{line} {how} on {name}")
    assert not found, "\n".join(found)
    assert used == ISINSTANCE_ALLOWED, f"allowed exceptions no longer needed: {sorted(ISINSTANCE_ALLOWED - used)}"


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


# ------------------------------------------------------------- docs/architecture.md against the tree
ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: names the page's change table uses that are not the packages' (torch's, argparse's, the command's own)
OUTSIDE_NAMES = {"nn.Module", "embdyn", "set_defaults"}


def module_names(path: Path) -> set[str]:
    """The names a module defines at its top level: functions, classes,
    assignments, imports, and the keys of a literal ``_EXPORTS`` table (the
    lazy exports of a package's ``__init__``)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if any(getattr(t, "id", None) == "_EXPORTS" for t in targets) and isinstance(node.value, ast.Dict):
                names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def resolves(dotted: str) -> bool:
    """Whether ``a.b.c`` is a module of ours, or a name a module of ours defines at its top level."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if path.is_file():
            rest = parts[i:]
            return not rest or rest[0] in module_names(path)
    return False


def test_the_architecture_page_names_files_and_modules_that_exist():
    """Every file or folder the page names in backticks (``kernels/law.py``,
    ``weak.py``: a path from the root or the end of one), every link to
    another page, and every dotted name of ours (``particles.threads.kernel_choice``)
    exists."""
    text = ARCHITECTURE.read_text()
    tracked = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
               if not any(part.startswith(".") or part in ("node_modules", "__pycache__")
                          for part in p.relative_to(ROOT).parts)]
    tracked += [t + "/" for t in tracked if (ROOT / t).is_dir()]
    missing = []
    for token in re.findall(r"`([^`\s<>]+)`", text):
        if re.search(r"\.(py|toml|md|js|json|html|css|sh)$", token) or token.endswith("/"):
            if token not in tracked and not any(t.endswith("/" + token) for t in tracked):
                missing.append(token)
        elif re.fullmatch(r"(particles|fitting|effective_theory)(\.\w+)+", token) and not resolves(token):
            missing.append(token)
    missing += [link for link in re.findall(r"\]\(([^)#:]+)\)", text) if not (ARCHITECTURE.parent / link).exists()]
    assert not missing, f"docs/architecture.md names what does not exist: {sorted(set(missing))}"


def test_the_change_table_names_only_what_the_packages_define():
    """Every identifier in backticks in "Where does my change go?" (a class,
    function, constant, attribute or keyword) is defined somewhere in the
    packages, the tests, the benchmarks or the explorer's scripts, or is Python's or listed in
    :data:`OUTSIDE_NAMES`: a rename leaves no stale instruction behind."""
    import builtins

    text = ARCHITECTURE.read_text()
    table = text[text.index("## Where does my change go?"):text.index("## Conventions")]
    defined = set()
    for path in sources(*OURS):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
                defined |= {n.attr for t in targets for n in ast.walk(t) if isinstance(n, ast.Attribute)}
            elif isinstance(node, ast.ImportFrom):
                defined |= {a.asname or a.name for a in node.names}
    for path in sorted((ROOT / "fitting" / "explore" / "static").glob("*.js")):  # the explorer's page
        defined |= set(re.findall(r"\b(?:const|let|var|function|class)\s+(\w+)", path.read_text()))
    packages = {p.parent.name for p in sources(*PACKAGES)}
    unknown = []
    for token in re.findall(r"`([^`]+)`", table):
        name = re.sub(r"\(.*\)$", "", token)
        if (not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", name) or re.search(r"\.(py|toml|md|js)$", name)
                or name in OUTSIDE_NAMES or name.split(".")[0] in OUTSIDE_NAMES):
            continue
        last = name.split(".")[-1]
        if last not in defined and last not in packages and not hasattr(builtins, last):
            unknown.append(token)
    assert not unknown, f"the change table names what nothing defines: {sorted(set(unknown))}"


def test_the_cross_package_tests_at_the_top_are_the_ones_the_page_lists():
    """The "New test" row lists the test modules at the top of ``tests/``."""
    text = ARCHITECTURE.read_text()
    listed = re.search(r"the cross-package tests stay at the top \(([^)]*)\)", text)
    assert listed, "the New test row no longer says which tests stay at the top"
    named = set(re.findall(r"`(test_\w+\.py)`", listed.group(1)))
    assert named == {p.name for p in (ROOT / "tests").glob("test_*.py")}


def test_the_kernels_import_nothing_outside_themselves():
    """``particles.kernels`` imports only its own modules and third-party
    packages (NumPy, Numba, llvmlite): no ``particles`` module above it, no
    other package of ours."""
    wrong = []
    for path in sources("particles/kernels"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                wrong.append(f"{module_of(path)}:{node.lineno} from {'.' * node.level}{node.module or ''}")
            for name in absolute_imports(node):
                if name.split(".")[0] in OURS:
                    wrong.append(f"{module_of(path)}:{node.lineno} imports {name}")
    assert not wrong, "\n".join(wrong)


def test_every_formulations_kind_has_its_words_in_the_report():
    """A formulation's ``kind`` is what the report (``ROW_MEANING``) and
    the figures name its rows by: a new kind needs its line there."""
    from fitting.ode.differentiation import Formulation
    from fitting.ode.report import ROW_MEANING

    kinds, todo = {}, [Formulation]
    while todo:
        cls = todo.pop()
        kinds[cls.__name__] = cls.kind
        todo += cls.__subclasses__()
    assert {"WeakForm", "FlowMap", "FiniteDifference", "SavitzkyGolay"} <= set(kinds)
    assert {name: kind for name, kind in kinds.items() if kind not in ROW_MEANING} == {}


#: figures of a ``figures.py`` that tests/test_figures.py does not list, and where they are checked instead
FIGURES_CHECKED_ELSEWHERE = {"plot_force_shares": "tests/fitting/forcefit/test_cli.py writes it",
                             "stages_figure": "tests/fitting/signals/test_stages.py reads its legend"}


def test_every_figure_is_in_the_figures_test():
    """Every function annotated ``-> Figure`` in a subpackage's
    ``figures.py`` is named in tests/test_figures.py (labels and legends
    checked), but for those in :data:`FIGURES_CHECKED_ELSEWHERE`, which
    the page lists and which must still be missing from it."""
    listed = (ROOT / "tests" / "test_figures.py").read_text()
    figures = set()
    for path in sources(*PACKAGES):
        if path.name != "figures.py" or path.parent.name == "core":
            continue
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.FunctionDef) and node.returns is not None
                    and ast.unparse(node.returns) == "Figure"):
                figures.add(node.name)
    missing = {name for name in figures if not re.search(rf"\b{name}\b", listed)}
    assert missing == set(FIGURES_CHECKED_ELSEWHERE), (
        f"figures not in tests/test_figures.py: {sorted(missing - set(FIGURES_CHECKED_ELSEWHERE))}; "
        f"listed there now, drop from FIGURES_CHECKED_ELSEWHERE: {sorted(set(FIGURES_CHECKED_ELSEWHERE) - missing)}")
    text = ARCHITECTURE.read_text()
    assert all(f"`{name}`" in text for name in FIGURES_CHECKED_ELSEWHERE)


#: the modules of fitting that import effective_theory (docs/architecture.md, the rules)
EFFECTIVE_THEORY_USERS = {"fitting.demo.run", "fitting.training.grid", "fitting.training.grid_result"}


def test_fitting_imports_effective_theory_where_the_page_says():
    users = {module_of(path) for path in sources("fitting")
             if any(name.split(".")[0] == "effective_theory" for _, name in imported_modules(path))}
    assert users == EFFECTIVE_THEORY_USERS
    text = " ".join(ARCHITECTURE.read_text().split())
    assert all(f"`{name.rsplit('.', 1)[-1]}`" in text or f"`{name}`" in text for name in EFFECTIVE_THEORY_USERS)
