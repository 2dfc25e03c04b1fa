"""``pfntheory/claims/`` measures and reads; it writes no file and has no command line (issue 48,
item 1).

The runners that score trained runs, batch, resume, cache and write the committed documents live
in ``pfntheory/pipelines/`` (``multihead_run``, ``breakdown_run``, ``shift_cause_run``), above
``claims/`` in the layers (tests/test_import_graph.py). This test parses every module of
``pfntheory/claims/`` with :mod:`ast` (nothing is imported) and fails on:

* a command line: a module-level ``def main`` / ``def _main``, or an ``if __name__ == "__main__"``
  block;
* a direct write: ``open(...)`` in a mode that writes (``w``, ``a``, ``x`` or ``+``), a call of
  ``write_text``, ``write_bytes``, ``mkdir``, ``touch``, ``unlink``, ``os.replace`` / ``os.rename``
  / ``os.remove``, ``json.dump``, ``pickle.dump``, ``np.save`` / ``np.savez`` / ``np.savetxt``,
  ``torch.save``, ``savefig``, ``to_csv`` / ``to_json``, ``shutil`` copies and moves, and the
  writers of :mod:`pfntheory.infra.runs` (``save_json``, ``save_torch``, ``atomic_write_bytes``,
  ``atomic_write_stream``, ``remove_corrupt_artefacts``, ``clean_orphan_temps``) by any spelling
  (``runs.save_json``, ``runfiles.save_json``, an imported ``save_json``);
* a call that asks a lower layer to write: a keyword ``save=True`` (``nn.evaluate.evaluate``
  writes its ``eval.json`` unless told ``save=False``).

What it cannot see: ``Path.rename`` / ``Path.replace`` (the same names as ``str.replace`` and
``dataclasses.replace``, which are not writes), and a write inside another layer's function under
a default argument. The claims modules call no writer of another layer (the one call of
``evaluate`` claims/ held, now in ``pipelines/breakdown_run.py``, passes ``save=False``).

Allowed exceptions: none (:data:`ALLOWED` is empty; an entry would name the module, the line's
call and why).

How the test can fail: :func:`test_the_scan_finds_each_kind_of_write` runs the scanner on
synthetic sources holding each pattern above, and on the runner modules of ``pipelines/`` (which
write), so a scanner that found nothing would fail there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pfntheory"
CLAIMS = PACKAGE / "claims"

#: Names whose call writes a file, whatever the object they are read from (a path, ``os``, a
#: module alias of :mod:`pfntheory.infra.runs`, a figure, a data frame).
WRITER_ATTRS = frozenset(
    {
        "write_text",
        "write_bytes",
        "mkdir",
        "touch",
        "unlink",
        "rmdir",
        "savefig",
        "to_csv",
        "to_json",
        "to_parquet",
        "save_json",
        "save_torch",
        "atomic_write_bytes",
        "atomic_write_stream",
        "_atomic_write",
        "_write_replace",
        "remove_corrupt_artefacts",
        "clean_orphan_temps",
    }
)
#: ``module.function`` calls that write (the module as imported under its usual names).
WRITER_CALLS = frozenset(
    {
        ("json", "dump"),
        ("pickle", "dump"),
        ("np", "save"),
        ("np", "savez"),
        ("np", "savez_compressed"),
        ("np", "savetxt"),
        ("numpy", "save"),
        ("torch", "save"),
        ("os", "replace"),
        ("os", "rename"),
        ("os", "remove"),
        ("os", "makedirs"),
        ("os", "mkdir"),
        ("shutil", "copy"),
        ("shutil", "copy2"),
        ("shutil", "copyfile"),
        ("shutil", "copytree"),
        ("shutil", "move"),
        ("shutil", "rmtree"),
    }
)
#: Bare names of writers imported ``from pfntheory.infra.runs import ...``.
WRITER_NAMES = frozenset(
    {
        "save_json",
        "save_torch",
        "atomic_write_bytes",
        "atomic_write_stream",
        "remove_corrupt_artefacts",
        "clean_orphan_temps",
    }
)
#: ``{(module file name, finding): reason}`` of writes or entry points claims/ may keep.
ALLOWED: dict[tuple[str, str], str] = {}


def _open_writes(call: ast.Call) -> bool:
    """Whether ``open(...)`` / ``x.open(...)`` is given a mode that writes."""
    mode = None
    func = call.func
    is_builtin = isinstance(func, ast.Name) and func.id == "open"
    if is_builtin and len(call.args) >= 2:
        mode = call.args[1]
    elif not is_builtin and call.args:  # Path.open(mode, ...)
        mode = call.args[0]
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return mode is not None  # a computed mode: counted as a write (it could be one)
    return any(c in mode.value for c in "wax+")


def findings(source: str) -> list[str]:
    """What in ``source`` (one module's text) writes a file or is a command line, one line each
    (``"<line>: <what>"``)."""
    tree = ast.parse(source)
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
            "main",
            "_main",
        ):
            out.append(f"{node.lineno}: def {node.name} (a command line)")
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name)
            and node.test.left.id == "__name__"
        ):
            out.append(f'{node.lineno}: if __name__ == "__main__" (a command line)')
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "open" and _open_writes(node):
                out.append(f"{node.lineno}: open(...) to write")
            elif func.id in WRITER_NAMES:
                out.append(f"{node.lineno}: {func.id}(...)")
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if func.attr == "open" and _open_writes(node):
                out.append(f"{node.lineno}: .open(...) to write")
            elif func.attr in WRITER_ATTRS:
                out.append(f"{node.lineno}: .{func.attr}(...)")
            elif owner is not None and (owner, func.attr) in WRITER_CALLS:
                out.append(f"{node.lineno}: {owner}.{func.attr}(...)")
        for kw in node.keywords:
            if kw.arg == "save" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                out.append(f"{node.lineno}: a call with save=True")
    return out


def _claims_modules() -> list[Path]:
    return sorted(CLAIMS.rglob("*.py"))


def test_the_claims_folder_is_scanned():
    """The scan reads the folder the layers name (a wrong path would pass on nothing)."""
    names = {p.name for p in _claims_modules()}
    assert {"__init__.py", "gating.py", "multihead_cells.py", "breakdown.py"} <= names, names


@pytest.mark.parametrize("path", _claims_modules(), ids=lambda p: p.name)
def test_claims_module_writes_nothing_and_has_no_command_line(path):
    """Fails on a module of claims/ that writes a file or is a command line (module docstring)."""
    found = [f for f in findings(path.read_text(encoding="utf-8")) if (path.name, f) not in ALLOWED]
    assert not found, (
        f"pfntheory/claims/{path.name} writes or runs (claims/ measures and reads: move it to "
        f"pfntheory/pipelines/): {found}"
    )


SYNTHETIC = {
    "def main(argv=None):\n    pass\n": "def main",
    "def _main(argv):\n    pass\n": "def _main",
    'if __name__ == "__main__":\n    pass\n': "__main__",
    'open("f", "w")\n': "open(...) to write",
    'open("f", mode="a")\n': "open(...) to write",
    'p.open("wb")\n': ".open(...) to write",
    'p.write_text("x")\n': ".write_text",
    'p.write_bytes(b"x")\n': ".write_bytes",
    "json.dump({}, fh)\n": "json.dump",
    'np.save("f", a)\n': "np.save",
    'torch.save(m, "f")\n': "torch.save",
    "runs.save_json(p, d)\n": ".save_json",
    "runfiles.save_torch(p, d)\n": ".save_torch",
    "save_json(p, d)\n": "save_json(",
    "atomic_write_bytes(p, b)\n": "atomic_write_bytes(",
    "p.parent.mkdir(parents=True)\n": ".mkdir",
    "os.replace(a, b)\n": "os.replace",
    "evaluate(rd, spec, save=True)\n": "save=True",
}
#: Sources that read only: none of them is a finding.
READS = (
    'open("f")\n',
    'open("f", "r")\n',
    'p.open("rb")\n',
    "p.read_text()\n",
    "json.dumps({})\n",
    "runs.load_json(p)\n",
    's.replace("a", "b")\n',
    "dataclasses.replace(x, a=1)\n",
    "evaluate(rd, spec, save=False)\n",
    "def mains():\n    pass\n",
)


@pytest.mark.parametrize("source, what", SYNTHETIC.items(), ids=list(SYNTHETIC.values()))
def test_the_scan_finds_each_kind_of_write(source, what):
    """Each planted write or command line is found, named."""
    found = findings(source)
    assert len(found) == 1 and what in found[0], (source, found)


@pytest.mark.parametrize("source", READS)
def test_the_scan_passes_reads(source):
    """Reading, formatting and replacing in memory are not writes."""
    assert findings(source) == [], source


def test_the_scan_finds_the_runners_in_pipelines():
    """The modules that took the runners out of claims/ write (their command lines are
    ``pfntheory sweep breakdown|shift_cause`` since issue 48): the scan sees them (it would see
    them in claims/)."""
    pipes = PACKAGE / "pipelines"
    for name, expect in (
        ("breakdown_run.py", (".save_json",)),
        ("shift_cause_run.py", (".save_json",)),
        ("multihead_run.py", (".save_json", ".mkdir")),
    ):
        found = " | ".join(findings((pipes / name).read_text(encoding="utf-8")))
        for e in expect:
            assert e in found, (name, e, found)
