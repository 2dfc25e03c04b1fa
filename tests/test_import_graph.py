"""The import graph of pfntheory/: no cycle, and no module imports a layer above its own.

Every module of ``pfntheory/`` is parsed with :mod:`ast` (nothing is imported). Each ``import`` and
``from ... import`` statement, at module level or inside a function, is an edge; relative imports
are resolved; a package's ``__init__`` is a node (``pfntheory.nn``). ``from pkg import name`` is an
edge to the module ``pkg.name`` when there is one, else to ``pkg`` (a name defined in its
``__init__``). Importing ``pkg.sub`` also runs ``pkg/__init__`` first; that is not an edge: a
package's ``__init__`` that re-exports its modules (the notebooks' ``report`` API) is its front
door, above them, and a module that imports a *name* from its own package's ``__init__`` is an
edge, so a cycle through a front door is still caught. The layers are those of docs/design.md,
"Layers" (:data:`LAYERS`).

How these tests can fail: the checker runs on synthetic graphs and packages holding a cycle
(``a -> b -> c -> a``, and ``pkg -> pkg.a -> pkg.b -> pkg`` written with relative,
function-level and package imports) and an import of a higher layer, and reports each. Before
this test the real graph held the cycle ``report.html -> report.recorder -> report.html``
(through ``report.tables`` too), which :func:`test_no_import_cycle` printed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pfntheory"

#: Layers from the bottom up (docs/design.md, "Layers"): a module may import its own layer and the
#: layers below it, never one above. Each entry names a module, or a package and all its modules;
#: the most specific entry holding a module decides its layer. A top-level module of pfntheory/
#: named nowhere (``pfntheory.maths.kernels``, ``pfntheory.maths.gp``, ...) is on the exact side
#: (:data:`EXACT`).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundations", ("pfntheory", "pfntheory.base._checks", "pfntheory.base.stats")),
    ("exact", ()),
    ("learned", ("pfntheory.nn",)),
    ("experiments", ("pfntheory.experiments",)),
    (
        "case-study inputs",
        (
            "pfntheory.casestudy",
            "pfntheory.casestudy.data",
            "pfntheory.casestudy.baseline",
            "pfntheory.casestudy.pfn",
            "pfntheory.casestudy.prepare",
        ),
    ),
    ("claims", ("pfntheory.claims",)),
    ("report", ("pfntheory.report",)),
    (
        "pipelines",
        (
            "pfntheory.pipelines.casestudy_predict",
            "pfntheory.pipelines.casestudy_results",
            "pfntheory.pipelines.casestudy_run",
            "pfntheory.pipelines.report_run",
            "pfntheory.report.__init__",
        ),
    ),
    (
        "command line",
        (
            "pfntheory.cli",
            "pfntheory.__main__",
            "pfntheory.cli",
            "pfntheory.cli.sweep",
            "pfntheory.cli.casestudy",
            "pfntheory.cli.report",
            "pfntheory.report.__main__",
        ),
    ),
)
#: The layer of the top-level modules named in no entry of :data:`LAYERS`.
EXACT = "exact"
ROOT = "pfntheory"


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


def packages(root: Path = PACKAGE) -> set[str]:
    """The module names of the packages under ``root`` (their ``__init__``)."""
    return {module_name(p, root) for p in root.rglob("__init__.py")}


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


def layer_of(module: str, layers=LAYERS, *, is_package: bool = False) -> int:
    """Index in ``layers`` of the layer holding ``module``: the entry naming the module itself
    (a package's ``__init__`` is named ``<package>.__init__`` when it must differ from its modules),
    else the longest entry naming a package above it, else :data:`EXACT` for a top-level module."""
    names = [module + ".__init__"] if is_package else []
    names.append(module)
    for name in names:
        for i, (_, entries) in enumerate(layers):
            if name in entries:
                return i
    best, best_len = None, -1
    for i, (_, entries) in enumerate(layers):
        for p in entries:
            if p != ROOT and module.startswith(p + ".") and len(p) > best_len:
                best, best_len = i, len(p)
    if best is not None:
        return best
    if module.count(".") == 1 and module.startswith(ROOT + "."):
        return [name for name, _ in layers].index(EXACT)
    raise ValueError(f"module {module!r} is in no layer of docs/design.md; add it to LAYERS")


def arrows_up(graph: dict[str, set[str]], layers=LAYERS, pkgs=frozenset()) -> list[str]:
    """Every edge from a module to a module of a higher layer, as readable lines (``pkgs``: the
    modules of ``graph`` that are packages)."""

    def layer(m: str) -> int:
        return layer_of(m, layers, is_package=m in pkgs)

    bad = []
    for m in sorted(graph):
        for t in sorted(graph[m]):
            lm, lt = layer(m), layer(t)
            if lt > lm:
                bad.append(f"{m} ({layers[lm][0]}) imports {t} ({layers[lt][0]})")
    return bad


# -- the real graph ---------------------------------------------------------------------------


def test_graph_sees_the_package():
    """The walk finds the package's modules and the edges of each kind of import (a walk that saw
    nothing would pass the two tests below vacuously), and the layers place them as
    docs/design.md says."""
    graph = import_graph()
    assert len(graph) > 60, sorted(graph)
    assert "pfntheory.maths.kernels" in graph["pfntheory.maths.gp"]  # from .kernels import ...
    assert "pfntheory.experiments.pool" in graph["pfntheory.experiments.runner"]  # from . import
    assert "pfntheory.claims" in graph["pfntheory.claims.richardson"]  # a name of the __init__
    assert "pfntheory.nn.train" in graph["pfntheory.experiments.execute"]  # inside a function
    layer = {name: i for i, (name, _) in enumerate(LAYERS)}
    pkgs = packages()
    assert "pfntheory.report" in pkgs and "pfntheory.report.html" not in pkgs
    assert layer_of("pfntheory.maths.kernels") == layer["exact"]
    assert layer_of("pfntheory.nn.model") == layer["learned"]
    assert layer_of("pfntheory.report.html") == layer["report"]
    assert layer_of("pfntheory.report", is_package=True) == layer["pipelines"]
    assert layer_of("pfntheory.cli.train") == layer["command line"]


def test_no_import_cycle():
    """No module of pfntheory/ reaches itself through its imports (package ``__init__`` included,
    function-level imports included)."""
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_of_a_higher_layer():
    """Each module imports only its own layer and those below (docs/design.md, "Layers")."""
    bad = arrows_up(import_graph(), pkgs=packages())
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


def test_checker_finds_an_arrow_up():
    """An import of a higher layer is reported, with both layers named; the same import
    downwards is not."""
    layers = (("low", ("p.low",)), ("high", ("p.high",)))
    assert arrows_up({"p.low.x": {"p.high.y"}, "p.high.y": set()}, layers) == [
        "p.low.x (low) imports p.high.y (high)"
    ]
    assert arrows_up({"p.high.y": {"p.low.x"}, "p.low.x": set()}, layers) == []
    with pytest.raises(ValueError, match="no layer"):
        layer_of("p.elsewhere", layers)
