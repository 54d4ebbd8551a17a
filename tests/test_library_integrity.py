"""The kernel library never reads or writes outside its folder, and loads only what passes its
integrity checks: names, paths, the shipped source's hash, the template (issue 16)."""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prism import library, plans
from prism.errors import LibraryError
from prism.graph import Graph
from prism.library import Built, Entry, Spec, build, parse_spec

GOOD = """
[[entry]]
program = "rmsnorm_linear"
sizes = { n = 1, d = 64 }
"""


def _optimize(graph: Graph, entry: Entry, arch: str) -> Built:
    kg = plans.hand_plans("rmsnorm_linear", graph)[0].instantiate({"x": 1, "i": 1})
    return Built(kg, f"// {entry.name}\n", {"kernels": []}, 1.0, "FakeGPU")


def _built(root: Path) -> dict[str, Any]:
    assert build(parse_spec(GOOD), _optimize, root=root, check_nvcc=False, progress=False) == {
        "rmsnorm_linear/n1_d64": "built"}
    return library.read_manifest(root)


def _edit(root: Path, change: Any) -> None:
    doc = library.read_manifest(root)
    change(doc["entries"]["rmsnorm_linear/n1_d64"])
    library.write_manifest(doc, root)


def _load(root: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    from prism import runtime

    monkeypatch.setattr(runtime, "compile_plan", lambda plan: type("K", (), {})())  # no GPU here
    return library.load("rmsnorm_linear", {"n": 1, "d": 64}, root=root)


@contextlib.contextmanager
def _guarded_writes(root: Path) -> Iterator[list[Path]]:
    """Every Path.write_text / Path.mkdir outside ``root`` fails the test instead of touching the
    disk (so a regression cannot litter the machine); yields the paths written."""
    written: list[Path] = []
    real_write, real_mkdir = Path.write_text, Path.mkdir

    def check(path: Path) -> None:
        if not path.resolve().is_relative_to(root.resolve()):
            raise AssertionError(f"the library touched {path!r}, outside {root}")

    def write_text(self: Path, *a: Any, **k: Any) -> int:
        check(self)
        written.append(self)
        return real_write(self, *a, **k)

    def mkdir(self: Path, *a: Any, **k: Any) -> None:
        if not root.resolve().is_relative_to(self.resolve()):  # the root itself and its parents may be made
            check(self)
        real_mkdir(self, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "write_text", write_text)
        mp.setattr(Path, "mkdir", mkdir)
        yield written


def _file_entry_root(top: Path) -> Path:
    root = top / "kernels"
    root.mkdir(parents=True)
    (root / "p.py").write_text("from prism.workloads import rmsnorm_linear\ndef f(**k): return rmsnorm_linear(1, 64)\n")
    return root


# ---------------------------------------------------------------------------------- the spec


@pytest.mark.parametrize("entry,match", [
    ('name = "../evil"', "name '../evil'"),
    ('name = "/tmp/evil"', "name '/tmp/evil'"),
    ('name = "a/b"', "name 'a/b'"),
    ('name = "a\\nb"', "name 'a\\\\nb'"),
    ('name = ".."', "name '..'"),
    ('sizes = { "../x" = 1 }', "sizes key '../x'"),
    ('sizes = { "/x" = 1 }', "sizes key '/x'"),
    ('file = "../outside.py"', "leads outside"),
    ('file = "/etc/passwd"', "relative path"),
    ('function = "os.system"', "function 'os.system'"),
])
def test_spec_names_and_files_that_would_leave_the_folder_are_rejected(entry: str, match: str) -> None:
    fields = {"file": '"prog.py"', "function": '"build"', "sizes": "{ n = 1 }"}
    key = entry.split(" = ")[0]
    fields[key] = entry.split(" = ", 1)[1]
    text = "[[entry]]\n" + "\n".join(f"{k} = {v}" for k, v in fields.items())
    with pytest.raises(LibraryError, match=match):
        parse_spec(text, Path(tempfile.gettempdir()) / "kernels")


def test_a_file_entry_through_a_symlink_out_of_the_folder_is_rejected(tmp_path: Path) -> None:
    base, outside = tmp_path / "kernels", tmp_path / "outside"
    base.mkdir(), outside.mkdir()
    (outside / "prog.py").write_text("def build(n): raise SystemExit('ran')\n")
    (base / "link").symlink_to(outside)
    with pytest.raises(LibraryError, match="leads outside"):
        parse_spec('[[entry]]\nfile = "link/prog.py"\nfunction = "build"\nsizes = { n = 1 }', base)
    with pytest.raises(LibraryError, match="leads outside"):  # an Entry made by hand is checked too
        Entry("prog", (("n", 1),), "float16", file="link/prog.py", function="build").build_graph(base)


@pytest.mark.parametrize("program,sizes", [("../evil", (("n", 1),)), ("/tmp/evil", (("n", 1),)),
                                           ("ok", (("/../../evil", 1),)), ("ok", (("../../../evil", 1),))])
def test_build_never_writes_outside_the_folder_even_for_entries_made_by_hand(
        tmp_path: Path, program: str, sizes: tuple[tuple[str, int], ...]) -> None:
    root = _file_entry_root(tmp_path)
    spec = Spec("sm_80", (Entry(program, sizes, "float16", file="p.py", function="f"),), root)
    with _guarded_writes(root):
        status = build(spec, _optimize, root=root, check_nvcc=False, progress=False)
    (result,) = status.values()
    assert result.startswith("failed:") and ("leads outside" in result or "relative path inside" in result)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.sampled_from("ab./\\_-\n~:"), min_size=1, max_size=10),
       st.text(st.sampled_from("nb./\\_-\n"), min_size=1, max_size=6))
def test_random_names_and_keys_either_fail_or_write_inside(name: str, key: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = _file_entry_root(Path(tmp))
        try:
            spec = parse_spec(f"[[entry]]\nname = {json.dumps(name)}\nfile = \"p.py\"\nfunction = \"f\"\n"
                              f"sizes = {{ {json.dumps(key)} = 1 }}", root)
        except LibraryError:
            return
        with _guarded_writes(root) as written:
            status = build(spec, _optimize, root=root, check_nvcc=False, progress=False)
        assert list(status.values()) == ["built"] and len(written) == 1


# ---------------------------------------------------------------------------------- the manifest


@pytest.mark.parametrize("source", ["../../outside.cu", "/etc/hostname", "rmsnorm_linear/../../x.cu"])
def test_a_manifest_source_outside_the_folder_is_never_read(tmp_path: Path, source: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kernels"
    _built(root)
    (tmp_path / "outside.cu").write_text("// secret\n")
    _edit(root, lambda rec: rec.update(source=source))
    with pytest.raises(LibraryError, match="source"):
        _load(root, monkeypatch)
    entry = parse_spec(GOOD).entries[0]
    assert not library.is_current(entry, "sm_80", library.read_manifest(root), root)


def test_load_checks_the_shipped_sources_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kernels"
    rec = _built(root)["entries"]["rmsnorm_linear/n1_d64"]
    assert _load(root, monkeypatch) is not None  # intact: loads (regenerated code differs: a warning)
    (root / rec["source"]).write_text("// tampered\nasm(\"trap;\");\n")
    with pytest.raises(LibraryError, match="source_sha256"):
        _load(root, monkeypatch)
    (root / rec["source"]).unlink()
    with pytest.raises(LibraryError, match="missing"):
        _load(root, monkeypatch)


@pytest.mark.parametrize("change,match", [
    (lambda rec: rec["template"].update(program="p\n#include </etc/passwd>"), "bad template"),
    (lambda rec: rec["template"]["inputs"][0].__setitem__(0, "X;int y"), "bad template"),
    (lambda rec: rec["template"]["kernels"][0].update(grid=[0]), "bad template"),
    (lambda rec: rec["template"]["inputs"][0].__setitem__(0, "Y"), "bad template|inputs"),
    (lambda rec: rec.pop("template"), r"lacks \['template'\]"),
    (lambda rec: rec.pop("source_sha256"), r"lacks \['source_sha256'\]"),
    (lambda rec: rec.pop("template_sha256"), r"lacks \['template_sha256'\]"),
    (lambda rec: rec.update(inputs=[["X", [2, 64]], ["W", [64, 64]]]), "inputs do not match"),
])
def test_a_tampered_manifest_record_is_a_library_error(tmp_path: Path, change: Any, match: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "kernels"
    _built(root)
    _edit(root, change)
    with pytest.raises(LibraryError, match=match):
        _load(root, monkeypatch)


@pytest.mark.parametrize("doc", [[], [1, 2], "x", {"format": "prism.kernel_library", "version": 1, "entries": []}])
def test_a_manifest_of_the_wrong_shape_is_a_library_error(tmp_path: Path, doc: object) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(LibraryError, match="manifest.json"):
        library.load("rmsnorm_linear", {"n": 1, "d": 64}, root=tmp_path)


@pytest.mark.parametrize("sizes", [{"n": "x"}, [1, 64], None, {"n": 1.5}, {"n": True}, {"n": 0}, "n=1"])
def test_bad_sizes_for_load_are_a_library_error(tmp_path: Path, sizes: object) -> None:
    _built(tmp_path)
    with pytest.raises(LibraryError, match="load"):
        library.load("rmsnorm_linear", sizes, root=tmp_path)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------- found by scripts/probe_table.py


def _unary_scalar(rec: dict[str, Any]) -> dict[str, Any]:
    return next(op for k in rec["template"]["kernels"] for op in k.get("ops", [])
                if isinstance(op.get("scalar"), dict) and "recip_dim" in op["scalar"])


@pytest.mark.parametrize("change", [
    lambda rec: rec["template"]["inputs"][1].__setitem__(2, "div"),  # a dtype that is no dtype
    lambda rec: rec["template"]["outputs"][0].__setitem__(1, [1.5, 64]),  # a shape that is no shape
    lambda rec: _unary_scalar(rec)["scalar"]["recip_dim"].__setitem__(0, "silu"),  # 1/size of no tensor
    lambda rec: _unary_scalar(rec)["scalar"]["recip_dim"].__setitem__(1, 7),  # 1/size of no dim
])
def test_a_template_with_a_bad_dtype_shape_or_dim_scalar_is_a_library_error(
        tmp_path: Path, change: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: a CodegenError naming dtype 'div', a bare KeyError 'silu' from code generation."""
    root = tmp_path / "kernels"
    _built(root)
    _edit(root, change)
    with pytest.raises(LibraryError, match="bad template"):
        _load(root, monkeypatch)


def test_library_list_shows_bad_records_instead_of_a_traceback(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from prism.cli import main

    (tmp_path / "manifest.json").write_text(json.dumps({"format": library.FORMAT, "version": library.VERSION, "entries": {
        "a/b": 5, "c/d": {"program": "c"}, "e/f": {"arch": "sm_80", "time_us": "fast"}}}))
    assert main(["library", "list", "--root", str(tmp_path)]) == 1  # listed, and a script can tell
    got = capsys.readouterr()
    out = got.out.splitlines()
    assert out[0].startswith("a/b") and "bad record" in out[0] and "bad record" in out[1] and len(out) == 3
    assert "e/f" in out[2] and "sm_80" in out[2]
    assert got.err.strip().splitlines() == [f"prism library: error: {tmp_path / 'manifest.json'}: 2 bad record(s) "
                                            "(listed above); rebuild the library"]


@pytest.mark.parametrize("fn", ["exp", "sqrt", "neg"])
def test_a_template_changed_in_meaning_is_refused_not_regenerated(tmp_path: Path, fn: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid plan that computes something else (one unary op changed, the shipped source intact):
    before, load regenerated code from it with only a warning (found by scripts/probe_table.py)."""
    root = tmp_path / "kernels"
    _built(root)

    def change(rec: dict[str, Any]) -> None:
        op = next(op for k in rec["template"]["kernels"] for op in k.get("ops", [])
                  if op.get("op") == "unary" and op.get("fn") in ("rsqrt", "square"))
        op["fn"] = fn

    _edit(root, change)
    with pytest.raises(LibraryError, match="template_sha256"):
        _load(root, monkeypatch)


def test_the_committed_manifest_records_its_templates_hashes() -> None:
    for name, rec in library.read_manifest()["entries"].items():
        assert rec["template_sha256"] == library.template_sha256(rec["template"]), name


# ---------------------------------------------------------------------------------- a program from a file

ROWS_PROGRAM = '''from prism.graph import Graph
def f(b, s, d):
    g = Graph()
    x = g.input((b, s, d), "float16", "X")
    w = g.input((d, d), "float16", "W")
    g.output(g.matmul(g.rms_norm(x), w), "O")
    return g
'''


def _rows_library(tmp_path: Path) -> Path:
    """A library of one program from a file whose [b, s, d] rows the search merges (an [8, 64] template)."""
    from prism.rows import searched_graph

    root = tmp_path / "kernels"
    root.mkdir()
    (root / "p.py").write_text(ROWS_PROGRAM)

    def optimize(graph: Graph, entry: Entry, arch: str) -> Built:
        kg = plans.hand_plans("rmsnorm_linear", searched_graph(graph))[0].instantiate({"x": 1, "i": 1})
        return Built(kg, f"// {entry.name}\n", {"kernels": []}, 1.0, "FakeGPU")

    spec = parse_spec('[[entry]]\nname = "rows"\nfile = "p.py"\nfunction = "f"\nsizes = { b = 2, s = 4, d = 64 }', root)
    assert build(spec, optimize, root=root, check_nvcc=False, progress=False) == {"rows/b2_s4_d64": "built"}
    return root


def _load_rows(root: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from prism import runtime

    monkeypatch.setattr(runtime, "compile_plan", lambda plan: type("K", (), {})())  # no GPU here
    return library.load("rows", {"b": 2, "s": 4, "d": 64}, root=root)


def test_a_program_from_a_file_is_loaded_at_its_own_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The record keeps the program as built (``graph_json``), so the loaded kernel takes and returns
    [2, 4, 64], not the searched [8, 64]; the record's inputs are the template's."""
    from prism.rows import RowsKernel

    root = _rows_library(tmp_path)
    rec = library.read_manifest(root)["entries"]["rows/b2_s4_d64"]
    assert rec["inputs"] == [["X", [8, 64]], ["W", [64, 64]]]
    k = _load_rows(root, monkeypatch)
    assert isinstance(k.kernel, RowsKernel)
    assert [(t.name, t.shape) for t in k.kernel.inputs] == [("X", (2, 4, 64)), ("W", (64, 64))]
    assert [(t.name, t.shape) for t in k.kernel.outputs] == [("O", (2, 4, 64))]


@pytest.mark.parametrize("change,match", [
    (lambda g: g["nodes"][0].update(shape=[2, 4, 32]), "its stored program is malformed"),
    (lambda g: g["nodes"][0].update(name="Y"), "malformed.*scalar DimRecip"),  # the norm's mean reads X's size
    (lambda g: g["outputs"][0].__setitem__(0, "P"), "does not match its structure_hash"),
    (lambda g: g.update(nodes="x"), "its stored program is malformed"),
])
def test_a_stored_program_edited_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any,
                                            match: str) -> None:
    root = _rows_library(tmp_path)
    doc = library.read_manifest(root)
    change(doc["entries"]["rows/b2_s4_d64"]["graph"])
    library.write_manifest(doc, root)
    with pytest.raises(LibraryError, match=match):
        _load_rows(root, monkeypatch)
