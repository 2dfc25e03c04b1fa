"""The import graph of pfntheory/: each folder is one layer, no folder imports a folder above
its own, and no module reaches itself through its imports.

Every module of ``pfntheory/`` is parsed with :mod:`ast` (nothing is imported). Each ``import`` and
``from ... import`` statement, at module level or inside a function, is an edge; relative imports
are resolved; a package's ``__init__`` is a node (``pfntheory.nn``). ``from pkg import name`` is an
edge to the module ``pkg.name`` when there is one, else to ``pkg`` (a name defined in its
``__init__``). Importing ``pkg.sub`` also runs ``pkg/__init__`` first; that is not an edge, and a
module that imports a *name* from its own package's ``__init__`` is an edge, so a cycle through a
package's front door is still caught.

The layers are the folders of ``pfntheory/`` (docs/design.md, "Layers", :data:`LAYERS`): a module's
layer is its folder's, whole; no table splits a folder. The package root holds only its
``__init__`` (the package constants, under every layer) and ``__main__`` (``python -m pfntheory``,
over every layer). Folder ``A`` imports folder ``B`` when a module of ``A`` imports one of ``B``.

How these tests can fail: the checker runs on synthetic graphs and packages holding a cycle
(``a -> b -> c -> a``, and ``pkg -> pkg.a -> pkg.b -> pkg`` written with relative,
function-level and package imports), a folder loop between acyclic modules, an import of a higher
folder and a module flat in the root, and reports each. Before the folders were the layers
(issue 40) the real tree held three folder loops (claims <-> casestudy, report <-> casestudy,
commands <-> experiments), which a table that split casestudy/, report/ and the command-line
modules across layers had made legal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pfntheory"
ROOT = "pfntheory"

#: The layers from the bottom up, one folder each (docs/design.md, "Layers"): a module may import
#: its own folder and the folders below it, never one above.
LAYERS: tuple[tuple[str, str], ...] = (
    ("foundations", "pfntheory.base"),
    ("exact side", "pfntheory.maths"),
    ("run tree", "pfntheory.infra"),
    ("learned side", "pfntheory.nn"),
    ("experiments", "pfntheory.experiments"),
    ("case-study inputs", "pfntheory.casestudy"),
    ("measurements", "pfntheory.claims"),
    ("report", "pfntheory.report"),
    ("pipelines", "pfntheory.pipelines"),
    ("command line", "pfntheory.cli"),
)
#: The two modules of the package root: its ``__init__`` under every layer, ``__main__`` over all.
ROOT_MODULES = {ROOT: "package constants", ROOT + ".__main__": "python -m pfntheory"}


def module_name(path: Path, root: Path) -> str:
    """``pfntheory/nn/model.py`` -> ``pfntheory.nn.model``; ``pfntheory/nn/__init__.py`` ->
    ``pfntheory.nn``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of a (possibly relative) import ``from <level dots><target>``."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]  # a module's relative imports start from its package
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imports_of(source: str, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``source`` (the text of ``module``) imports anywhere."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            subs = [f"{base}.{a.name}" for a in node.names]
            names = [s if s in modules else base for s in subs]
        else:
            continue
        for name in names:
            while name and name not in modules:  # ``import a.b.c`` of a name inside a module
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules it imports}`` over every ``.py`` file under ``root``."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    return {
        m: imports_of(p.read_text(encoding="utf-8"), m, p.name == "__init__.py", modules)
        for m, p in files.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph.get(start, ())))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def folder_of(module: str) -> str:
    """The folder (top-level subpackage) holding ``module``: ``pfntheory.nn.model`` and the
    package ``pfntheory.nn`` -> ``pfntheory.nn``; the root's two modules are their own."""
    if module in ROOT_MODULES:
        return module
    parts = module.split(".")
    if parts[0] != ROOT or len(parts) < 2:
        raise ValueError(f"module {module!r} is not in {ROOT}/")
    return ".".join(parts[:2])


def layer_of(module: str, layers=LAYERS) -> int:
    """Index in ``layers`` of ``module``'s folder: -1 for the package root's ``__init__`` (under
    every layer), ``len(layers)`` for its ``__main__`` (over every layer). A folder in no layer,
    or a module flat in the root, raises."""
    if module == ROOT:
        return -1
    if module == ROOT + ".__main__":
        return len(layers)
    folder = folder_of(module)
    for i, (_, name) in enumerate(layers):
        if name == folder:
            return i
    raise ValueError(
        f"module {module!r} is in no layer of docs/design.md: put it in the folder of its layer"
        " (a module flat in pfntheory/ is in none), or add its folder to LAYERS"
    )


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``{folder: folders it imports}``: folder ``A`` imports ``B`` when a module of ``A`` imports
    a module of ``B`` (the root's two modules are folders of their own)."""
    out: dict[str, set[str]] = {}
    for m, targets in graph.items():
        a = folder_of(m)
        out.setdefault(a, set())
        out[a] |= {folder_of(t) for t in targets} - {a}
    return out


def arrows_up(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """Every edge from a module to a module of a higher layer, as readable lines."""

    def name(i: int) -> str:
        return "root" if i < 0 else "entry point" if i >= len(layers) else layers[i][0]

    bad = []
    for m in sorted(graph):
        for t in sorted(graph[m]):
            lm, lt = layer_of(m, layers), layer_of(t, layers)
            if lt > lm:
                bad.append(f"{m} ({name(lm)}) imports {t} ({name(lt)})")
    return bad


# -- the real graph ---------------------------------------------------------------------------


def test_graph_sees_the_package():
    """The walk finds the package's modules and the edges of each kind of import (a walk that saw
    nothing would pass the tests below vacuously), and the layers place them as docs/design.md
    says."""
    graph = import_graph()
    assert len(graph) > 60, sorted(graph)
    assert "pfntheory.maths.kernels" in graph["pfntheory.maths.gp"]  # from .kernels import ...
    assert "pfntheory.experiments.pool" in graph["pfntheory.experiments.runner"]  # from . import
    assert "pfntheory.claims" in graph["pfntheory.claims.richardson"]  # a name of the __init__
    assert "pfntheory.nn.train" in graph["pfntheory.experiments.execute"]  # inside a function
    layer = {name: i for i, (name, _) in enumerate(LAYERS)}
    assert layer_of("pfntheory.maths.kernels") == layer["exact side"]
    assert layer_of("pfntheory.nn.model") == layer["learned side"]
    assert layer_of("pfntheory.report") == layer_of("pfntheory.report.html") == layer["report"]
    assert layer_of("pfntheory.pipelines.report_run") == layer["pipelines"]
    assert layer_of("pfntheory.cli") == layer_of("pfntheory.cli.train") == layer["command line"]
    assert layer_of("pfntheory") < 0 and layer_of("pfntheory.__main__") == len(LAYERS)


def test_each_folder_is_one_layer():
    """The tree shows the layers: every folder of pfntheory/ (a package) is a layer of
    :data:`LAYERS` and every layer is a folder; the root holds no module but its ``__init__`` and
    ``__main__`` (no module sits flat beside the folders)."""
    folders = {f"{ROOT}.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert folders == {name for _, name in LAYERS}
    flat = {f"{ROOT}.{p.stem}" for p in PACKAGE.glob("*.py")} - {ROOT + ".__init__"}
    assert flat == set(ROOT_MODULES) - {ROOT}, sorted(flat)
    for m in import_graph():
        layer_of(m)  # raises for a module of no layer


def test_no_import_cycle():
    """No module of pfntheory/ reaches itself through its imports (package ``__init__`` included,
    function-level imports included)."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_folder_loop():
    """No folder of pfntheory/ reaches itself through its modules' imports."""
    cycle = find_cycle(folder_graph(import_graph()))
    assert cycle is None, "folder loop: " + " -> ".join(cycle or [])


def test_no_import_of_a_higher_layer():
    """Each module imports only its own folder and the folders below (docs/design.md,
    "Layers")."""
    bad = arrows_up(import_graph())
    assert not bad, "imports of a higher layer:\n" + "\n".join(bad)


# -- the checker itself -----------------------------------------------------------------------


def test_checker_finds_a_cycle():
    """A synthetic graph with the cycle a -> b -> c -> a is caught and the cycle printed; an
    acyclic one is not."""
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    graph["c"] = set()
    assert find_cycle(graph) is None


def test_checker_resolves_imports(tmp_path):
    """Relative and function-level imports, ``from pkg import module`` and a package's
    ``__init__`` become the edges described in the module docstring, and the cycle through the
    package's ``__init__`` is caught."""
    pkg = tmp_path / "pfntheory"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import f\n")
    (pkg / "sub" / "a.py").write_text("def f():\n    from pfntheory.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import top\nfrom . import CONST\n")
    (pkg / "top.py").write_text("import pfntheory.sub.a as x\n")
    graph = import_graph(pkg)
    assert graph == {
        "pfntheory": set(),
        "pfntheory.sub": {"pfntheory.sub.a"},
        "pfntheory.sub.a": {"pfntheory.sub.b"},
        "pfntheory.sub.b": {"pfntheory.top", "pfntheory.sub"},
        "pfntheory.top": {"pfntheory.sub.a"},
    }
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1], cycle


def test_checker_finds_a_folder_loop():
    """Two folders that import each other through different modules (the module graph acyclic,
    as claims <-> casestudy was) are a folder loop; the same imports one way are not."""
    graph = {
        "pfntheory.a.x": {"pfntheory.b.y"},
        "pfntheory.b.y": set(),
        "pfntheory.b.z": {"pfntheory.a.w"},
        "pfntheory.a.w": set(),
    }
    assert find_cycle(graph) is None
    assert find_cycle(folder_graph(graph)) in (
        ["pfntheory.a", "pfntheory.b", "pfntheory.a"],
        ["pfntheory.b", "pfntheory.a", "pfntheory.b"],
    )
    graph["pfntheory.b.z"] = set()
    assert find_cycle(folder_graph(graph)) is None


def test_checker_finds_an_arrow_up():
    """An import of a higher folder is reported, with both layers named; the same import
    downwards is not; a module flat in the root or in an unknown folder is in no layer."""
    layers = (("low", "pfntheory.low"), ("high", "pfntheory.high"))
    up = {"pfntheory.low.x": {"pfntheory.high.y"}, "pfntheory.high.y": set()}
    assert arrows_up(up, layers) == ["pfntheory.low.x (low) imports pfntheory.high.y (high)"]
    down = {"pfntheory.high.y": {"pfntheory.low.x"}, "pfntheory.low.x": {"pfntheory"}}
    assert arrows_up(down, layers) == []
    assert arrows_up({"pfntheory": {"pfntheory.low.x"}, "pfntheory.low.x": set()}, layers)
    for module in ("pfntheory.flat", "pfntheory.elsewhere.x"):
        with pytest.raises(ValueError, match="no layer"):
            layer_of(module, layers)
