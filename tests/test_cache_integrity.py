"""Cache entries that decode but are wrong are evicted and rebuilt, never hits forever; a cache
that cannot be written costs the cache, not the result (issue 16)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prism import pipeline, plans, workloads
from prism.cache import JsonCache
from prism.graph import Graph
from prism.ir import CustomKernel, KernelGraph, Load, UnaryOp
from prism.ops import Unary
from prism.partition import renamed
from prism.tune.backends import InterpreterBackend
from prism.verify import verify_all


def _seed(program: str, graph: Graph) -> Path:
    templates = plans.hand_plans(program, graph)
    assert all(v.proven for v in verify_all(graph, templates))
    pipeline.save_verified(graph, templates, {"candidates": 0})
    return pipeline.search_cache().path(graph.structure_key())


def _rewrite(cache: JsonCache, key: str, change: Any) -> None:
    """Edit an entry's payload and store it with a valid checksum (it decodes; it is wrong)."""
    payload = json.loads(cache.path(key).read_text())["payload"]
    change(payload)
    cache.put(key, payload)


def _rename_input(kg: dict[str, Any], old: str, new: str) -> None:
    for spec in kg["inputs"]:
        if spec[0] == old:
            spec[0] = new
    for k in kg["kernels"]:
        for op in k.get("ops", []):
            if op.get("tensor") == old:
                op["tensor"] = new


def _break_silu(kg: dict[str, Any]) -> None:
    """The plan with silu replaced by exp: names and structure intact, values wrong."""
    hits = [op for k in kg["kernels"] for op in k.get("ops", []) if op.get("fn") == "silu"]
    assert hits
    for op in hits:
        op["fn"] = "exp"


def _no_search(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def fake_search(*a: Any, **k: Any) -> Any:
        calls.append("search")
        raise RuntimeError("search was run")

    monkeypatch.setattr("prism.search.search", fake_search)
    return calls


def _timer(kg: KernelGraph) -> float:
    return float(sum(len(k.ops) for k in kg.kernels if isinstance(k, CustomKernel)))


# ---------------------------------------------------------------------------------- search cache


@pytest.mark.parametrize("damage", ["renamed input", "renamed output", "wrong op", "dangling load"])
def test_a_search_entry_that_decodes_but_is_wrong_is_evicted_and_searched_again(
        damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    g = workloads.swiglu(4, 32)
    path = _seed("swiglu", g)
    change = {
        "renamed input": lambda p: [_rename_input(t, "X", "Y") for t in p["templates"]],
        "renamed output": lambda p: [_rename_input(t, "O", "P") for t in p["templates"]],
        "wrong op": lambda p: _break_silu(p["templates"][0]),
        "dangling load": lambda p: p["templates"][0]["kernels"][0]["ops"][0].update(tensor="nowhere"),
    }[damage]
    _rewrite(pipeline.search_cache(), g.structure_key(), change)
    calls = _no_search(monkeypatch)
    with pytest.raises(RuntimeError, match="search was run"):  # not a KeyError, not a hit
        pipeline.search_and_verify(g, program="swiglu", partitioned=False, progress=False)
    assert calls == ["search"] and not path.exists()


def test_an_intact_search_entry_is_a_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    g = workloads.swiglu(4, 32)
    path = _seed("swiglu", g)
    calls = _no_search(monkeypatch)
    out = pipeline.search_and_verify(g, program="swiglu", partitioned=False, progress=False)
    assert out.cached and calls == [] and path.exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_corruptions_of_a_search_entry_are_never_a_wrong_hit(data: st.DataObject) -> None:
    """Random edits of a valid entry (checksum made valid again): either it loads and every plan
    still computes the program, or it is evicted; never a bare exception."""
    from prism import interpreter
    from prism.codegen.sizes import legal_sizes

    g = workloads.swiglu(4, 32)
    _seed("swiglu", g)
    cache, key = pipeline.search_cache(), g.structure_key()
    payload = json.loads(cache.path(key).read_text())["payload"]
    leaves = list(_leaves(payload["templates"]))
    where, _ = leaves[data.draw(st.integers(0, len(leaves) - 1))]
    value = data.draw(st.one_of(st.sampled_from(["X", "Wg", "O", "t0", "silu", "exp", "mul", "load", "x", "i"]),
                                st.integers(-1, 4), st.none()))
    _set(payload["templates"], where, value)
    cache.put(key, payload)
    hit = cache.get(key, lambda p: pipeline._decode_search(p, key, g))
    if hit is None:
        assert not cache.path(key).exists()
        return
    if not pipeline._screened(g, hit[0]):
        return  # the pipeline evicts it (test above)
    rng = __import__("numpy").random.default_rng(0)
    ins = {t.name: rng.standard_normal(t.shape) for t in g.inputs}
    ref = g.evaluate(ins)["O"]
    for t in hit[0]:
        sizes = legal_sizes(pipeline.bind_shapes(t, g), arch="sm_90", resources=None, limit=1)
        if sizes:
            got = interpreter.run(pipeline.bind_shapes(t, g).instantiate(sizes[0]), ins)["O"]
            assert abs(got - ref).max() < 1e-9 * max(1.0, abs(ref).max())


def _leaves(obj: Any, path: tuple[Any, ...] = ()) -> Any:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


# ---------------------------------------------------------------------------------- tuned cache


def _tuned_key(g: Graph) -> str:
    return pipeline._tuned_key(g, InterpreterBackend(_timer).arch())[0]


def _superoptimize(g: Graph) -> pipeline.Superoptimized:
    return pipeline.superoptimize(g, program="rmsnorm_linear", samples=3, seed=1, backend=InterpreterBackend(_timer),
                                  progress=False)


@pytest.mark.parametrize("damage", ["wrong op", "renamed input", "not a plan"])
def test_a_tuned_entry_that_fails_its_check_is_evicted_and_retuned(damage: str) -> None:
    g = workloads.rmsnorm_linear(4, 32)
    _seed("rmsnorm_linear", g)
    first = _superoptimize(g)
    assert not first.summary["tune_cache_hit"]
    store, key = JsonCache("tuned", pipeline.TUNE_CACHE_SCHEMA), _tuned_key(g)

    def change(p: dict[str, Any]) -> None:
        kg = p["kernel_graph"]
        if damage == "wrong op":
            kg = KernelGraph.from_json(kg)
            k = next(k for k in kg.kernels if isinstance(k, CustomKernel))
            ops = tuple(replace(op, fn=Unary.EXP) if isinstance(op, UnaryOp) else op for op in k.ops)
            assert ops != k.ops
            p["kernel_graph"] = replace(kg, kernels=tuple(replace(k, ops=ops) if x is k else x
                                                          for x in kg.kernels)).to_json()
        elif damage == "renamed input":  # stored under names by position
            _rename_input(kg, pipeline._tuned_key(g, "")[1]["X"], "Y")
        else:
            p["kernel_graph"] = {"format": "prism.kernel_graph", "version": 1}

    _rewrite(store, key, change)
    second = _superoptimize(g)
    assert not second.summary["tune_cache_hit"] and second.summary["rel_err"] < 1e-9
    third = _superoptimize(g)  # rebuilt: a hit again
    assert third.summary["tune_cache_hit"] and third.kernel_graph == second.kernel_graph


def test_a_tuned_entry_that_decodes_but_does_not_run_is_evicted(monkeypatch: pytest.MonkeyPatch) -> None:
    g = workloads.rmsnorm_linear(4, 32)
    _seed("rmsnorm_linear", g)
    _superoptimize(g)
    store, key = JsonCache("tuned", pipeline.TUNE_CACHE_SCHEMA), _tuned_key(g)
    stored = KernelGraph.from_json(json.loads(store.path(key).read_text())["payload"]["kernel_graph"])
    cached = renamed(stored, {pos: mine for mine, pos in pipeline._tuned_key(g, "")[1].items()})
    real = InterpreterBackend.compile
    seen: list[int] = []

    def compile_once_broken(self: InterpreterBackend, kg: KernelGraph) -> Any:
        if kg == cached and not seen:
            seen.append(1)
            raise KeyError("X")  # what a plan of other names did at run time
        return real(self, kg)

    monkeypatch.setattr(InterpreterBackend, "compile", compile_once_broken)
    again = _superoptimize(g)
    assert seen and not again.summary["tune_cache_hit"] and store.path(key).exists()


# ---------------------------------------------------------------------------------- unwritable caches


def test_an_unwritable_cache_warns_and_keeps_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    g = workloads.rmsnorm_linear(4, 32)
    _seed("rmsnorm_linear", g)
    (Path(os.environ["PRISM_CACHE_DIR"]) / "tuned").write_text("a file where a folder should be")
    with caplog.at_level(logging.WARNING):
        out = _superoptimize(g)
    assert out.summary["rel_err"] < 1e-9 and "not cached" in caplog.text
    bad = tmp_path / "not-a-dir"
    bad.write_text("")
    monkeypatch.setenv("PRISM_CACHE_DIR", str(bad))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        pipeline.save_verified(g, plans.hand_plans("rmsnorm_linear", g), {})
    assert "not cached" in caplog.text


def test_search_cli_with_a_bad_cache_dir_warns_and_succeeds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from prism.cli import main

    bad = tmp_path / "file"
    bad.write_text("")
    monkeypatch.setenv("PRISM_CACHE_DIR", str(bad / "sub"))
    assert main(["search", "swiglu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


def test_a_cache_entry_that_cannot_be_read_is_a_miss(tmp_path: Path) -> None:
    c = JsonCache("t", 1, tmp_path)
    c.path("k").parent.mkdir(parents=True)
    c.path("k").mkdir()  # a folder where the entry should be: cannot be read nor deleted as a file
    assert c.get("k", lambda p: p) is None


def test_load_inputs_are_checked_when_a_renamed_plan_is_bound() -> None:
    g = workloads.swiglu(4, 32)
    kg = plans.hand_plans("swiglu", g)[0]
    renamed = KernelGraph.from_json(json.loads(json.dumps(kg.to_json()).replace('"X"', '"Y"')))
    assert pipeline.plan_misfit(kg, g) is None
    assert "inputs" in (pipeline.plan_misfit(renamed, g) or "")
    assert any(isinstance(op, Load) and op.tensor == "Y" for k in renamed.kernels if isinstance(k, CustomKernel)
               for op in k.ops)


def test_a_cached_plan_that_is_ill_formed_for_some_sizes_is_evicted() -> None:
    """X @ Wg corrupted to Wg @ Wg: the screen cannot run it at its sizes (the contraction fits only
    when two sizes are equal), but it is not a plan for every size: the shape check evicts it."""
    g = workloads.swiglu(4, 32)
    _seed("swiglu", g)
    cache, key = pipeline.search_cache(), g.structure_key()
    payload = json.loads(cache.path(key).read_text())["payload"]
    ops = payload["templates"][0]["kernels"][0]["ops"]
    mm = next(op for op in ops if op["op"] == "matmul")
    load_x = next(i for i, op in enumerate(ops) if op["op"] == "load" and op["tensor"] == "X")
    mm["a"] = next(i for i, op in enumerate(ops) if op["op"] == "load" and i != load_x and i == mm["b"])
    cache.put(key, payload)
    hit = cache.get(key, lambda p: pipeline._decode_search(p, key, g))
    assert hit is None or not pipeline._screened(g, hit[0])


def test_a_tuning_made_by_other_code_generation_is_a_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tuned key carries a digest of the code that generates, launches and times kernels: after a
    code-generation change the stored choice and its timing are stale, so the program is tuned again."""
    g = workloads.rmsnorm_linear(4, 32)
    _seed("rmsnorm_linear", g)
    assert not _superoptimize(g).summary["tune_cache_hit"]
    assert _superoptimize(g).summary["tune_cache_hit"]
    before = _tuned_key(g)
    assert before.endswith(pipeline.codegen_fingerprint())
    with monkeypatch.context() as m:
        m.setattr(pipeline, "_CODEGEN_SOURCES", ("runtime.py",))  # as if the other sources had changed
        pipeline.codegen_fingerprint.cache_clear()
        assert _tuned_key(g) != before
        assert not _superoptimize(g).summary["tune_cache_hit"]
    pipeline.codegen_fingerprint.cache_clear()
    assert _tuned_key(g) == before and _superoptimize(g).summary["tune_cache_hit"]
