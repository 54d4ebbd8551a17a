"""PyTorch capture where torch is installed (CI has none: the module skips itself there).

CPU: Dynamo's graph of a Llama decoder layer maps to the expected regions; every region, bound as a
Prism Graph and evaluated in float64, matches the region's own PyTorch ops; when superoptimize fails
(no GPU) or its kernel disagrees with PyTorch, the region stays with PyTorch, with a warning. GPU (marked): the layer
runs with its regions in Prism kernels, close to eager, and replays under a CUDA graph.
"""

from __future__ import annotations

import functools
import sys
import types
import warnings
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from bench.capture_models import LayerConfig, layer_inputs, llama_layer  # noqa: E402
from prism.capture import CaptureOptions, CaptureWarning, Fallback, compile, prism_backend  # noqa: E402
from prism.capture.build import bind, evaluate  # noqa: E402
from prism.capture.report import CaptureReport, Outcome  # noqa: E402
from prism.capture.runner import RegionRunner, _Entry  # noqa: E402
from prism.errors import CaptureError, DeviceError  # noqa: E402
from prism.reference import relative_error  # noqa: E402

SMALL = LayerConfig(hidden=64, heads=4, kv_heads=2, ffn=96)
EAGER = CaptureOptions(fallback=Fallback.EAGER)  # Inductor's C++ compile of every region takes ~40 s on 2 cores


def _layer(dtype: Any = torch.float32, device: str = "cpu") -> Any:
    torch.manual_seed(0)
    m = llama_layer(SMALL).to(device, dtype).eval()
    for p in m.parameters():
        p.requires_grad_(False)
    return m


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[RegionRunner, tuple[Any, ...]]]:
    """Regions run their PyTorch ops, and every call's inputs are kept."""
    calls: list[tuple[RegionRunner, tuple[Any, ...]]] = []

    def prepare(self: RegionRunner, key: str, inputs: Any) -> _Entry:
        calls.append((self, tuple(inputs)))
        return _Entry(None)

    monkeypatch.setattr(RegionRunner, "_prepare", prepare)
    return calls


@pytest.mark.parametrize(("batch", "length", "past"), [(2, 1, 5), (1, 6, 0)])
def test_every_region_of_a_llama_layer_is_its_pytorch_ops(monkeypatch: pytest.MonkeyPatch, batch: int, length: int,
                                                          past: int) -> None:
    torch._dynamo.reset()
    calls = _record(monkeypatch)
    m = _layer()
    ins = layer_inputs(SMALL, batch, length, past, device="cpu", dtype=torch.float32)
    report = CaptureReport()
    fast = torch.compile(m, backend=lambda gm, ex: prism_backend(gm, ex, report=report, options=EAGER))
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=0, atol=0)
    ops = [r.ops for g in report.graphs for r in g.regions]
    assert ops[0][:6] == ("to", "pow", "mean", "add", "rsqrt", "mul") and ops[0].count("linear") == 3
    assert ("scaled_dot_product_attention",) in ops if past else ("scaled_dot_product_attention",) not in ops
    # o projection, residual, the second norm, the SwiGLU MLP, residual: one region
    assert any(r.count("linear") == 4 and "silu" in r and r.count("rsqrt") == 1 for r in ops)
    assert ops.count(("mul", "mul", "add")) == 2  # the rotary embedding of q and of k
    assert len(calls) == len(ops)
    for runner, inputs in calls:
        program = bind(runner.spec, [tuple(t.shape) for t in inputs], "float32")
        got = evaluate(program, [t.double().numpy() for t in inputs])
        for a, b in zip(got, runner.eager(*inputs), strict=True):
            assert relative_error(a, b.double().numpy()) < 1e-5, runner.record.ops


def test_what_stays_with_pytorch_is_named() -> None:
    torch._dynamo.reset()

    def fn(x: Any, w: Any) -> Any:
        y = torch.nn.functional.softplus(x @ w, threshold=5.0) * 2.0  # softplus is a composite for threshold 20
        z = torch.exp(y).sum(-1)  # keepdim=False
        return torch.softmax(torch.cat((y, y), -1), -1) * 0.5 + z[..., None].sqrt()

    report = CaptureReport()
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    fast = torch.compile(fn, backend=lambda gm, ex: prism_backend(gm, ex, report=report, options=EAGER))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)
        torch.testing.assert_close(fast(x, w), fn(x, w))
    left = report.summary()["left_to_pytorch"]
    assert any("softplus threshold" in k for k in left) and any("keepdim=False" in k for k in left)
    assert any(k.startswith("cat") for k in left)


def _fake_pipeline(monkeypatch: pytest.MonkeyPatch, superoptimize: Any) -> None:
    """``prism.pipeline.superoptimize`` replaced (the runner imports it when a region first runs)."""
    module = types.ModuleType("prism.pipeline")
    module.superoptimize = superoptimize  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prism.pipeline", module)


def test_a_failing_superoptimize_leaves_each_region_to_pytorch_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_gpu(graph: Any, **kw: Any) -> Any:
        raise DeviceError("no CUDA device is present (test)")

    _fake_pipeline(monkeypatch, no_gpu)
    torch._dynamo.reset()
    m = _layer()
    ins = layer_inputs(SMALL, 2, 1, 5, device="cpu", dtype=torch.float32)
    with pytest.warns(CaptureWarning, match="runs in PyTorch: DeviceError: no CUDA device"):
        fast = compile(m, example_inputs=ins, options=EAGER)
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=0, atol=0)
    s = fast.summary()
    assert s["regions"] == 5 and s["regions_in_prism"] == 0 and s["nodes_captured"] > 0
    assert all(o[0] == "pytorch" for r in s["region_outcomes"] for o in r["outcomes"].values())
    torch._dynamo.reset()
    with pytest.raises(CaptureError, match="DeviceError"):
        compile(m, example_inputs=ins, options=CaptureOptions(strict=True, fallback=Fallback.EAGER))


def _norm(x: Any, w: Any) -> Any:
    """A 6-op region (an RMS norm) small enough for Inductor's C++ compile to take seconds."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def _norm_in_place(x: Any, w: Any) -> Any:
    return _norm(x, w).mul_(1.0)  # a node that writes in place: the graph is not run before Inductor compiles it


@pytest.mark.parametrize(("fn", "inductor_fails", "runner_calls"), [(_norm, False, 1), (_norm_in_place, False, 3),
                                                                     (_norm, True, 0)])
def test_a_region_prism_does_not_run_runs_in_inductor(monkeypatch: pytest.MonkeyPatch, fn: Any, inductor_fails: bool,
                                                      runner_calls: int) -> None:
    """By default the PyTorch side of a region is Inductor's kernels for it, compiled once per shape.
    The backend runs the graph on the example inputs first, so each region decides there; one that
    PyTorch runs is then inlined in the graph that Inductor compiles (its kernels ran once, for the
    decision). Where the graph writes in place it is not run first: the region stays a call, and its
    Inductor kernels run at every call. When Inductor fails on the region, its eager ops run, with a
    warning."""
    import prism.capture.runner as runner_module

    _fake_pipeline(monkeypatch, lambda graph, **kw: (_ for _ in ()).throw(DeviceError("no CUDA device (test)")))
    made, calls = [], [0]
    real = runner_module._inductor

    def counted(eager: Any, inputs: Any) -> Any:
        if inductor_fails:
            raise RuntimeError("no C++ compiler (test)")
        compiled = real(eager, inputs)
        made.append(tuple(t.shape for t in inputs))

        def call(*a: Any) -> Any:
            calls[0] += 1
            return compiled(*a)
        return call

    monkeypatch.setattr(runner_module, "_inductor", counted)
    torch._dynamo.reset()
    x, w = torch.randn(4, 32), torch.randn(32)
    with pytest.warns(CaptureWarning) as caught:
        fast = compile(fn, example_inputs=(x, w))
    assert any("Inductor failed" in str(c.message) for c in caught) == inductor_fails
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(fast(x, w), fn(x, w), rtol=1e-5, atol=1e-5)
    assert made == ([] if inductor_fails else [((4, 32), (32,))])  # compiled once for the shape
    assert calls[0] == runner_calls
    assert fast.summary()["regions"] == 1 and fast.summary()["regions_in_prism"] == 0


def test_a_graph_that_writes_in_place_is_not_run_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decode step that adds into a cache in place: the backend does not run the graph on the example
    inputs before compiling it (the add would land twice); each call adds once, as eagerly."""
    _fake_pipeline(monkeypatch, lambda graph, **kw: (_ for _ in ()).throw(DeviceError("no CUDA device (test)")))
    torch._dynamo.reset()
    w = torch.randn(16, 16)

    def step(x: Any, cache: Any) -> Any:
        cache.add_(torch.nn.functional.silu(x @ w) * 2.0 + 1.0)
        return cache * 0.5

    x = torch.randn(4, 16)
    ours, theirs = torch.zeros(4, 16), torch.zeros(4, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)
        fast = compile(step, example_inputs=(x, ours))  # the first call: one add
    with torch.no_grad():
        got = fast(x, ours)
    step(x, theirs)
    want = step(x, theirs)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("writes_outside", [True, False])
def test_compiling_with_example_inputs_says_when_that_call_wrote_in_place(monkeypatch: pytest.MonkeyPatch,
                                                                          writes_outside: bool) -> None:
    """``prism.compile(fn, example_inputs)`` calls ``fn``: where it writes a tensor from outside the
    graph in place (here a cache, through a view), a CaptureWarning names the write; an in-place op on a
    tensor the function made is no effect and gets none. The report lists the writes."""
    _fake_pipeline(monkeypatch, lambda graph, **kw: (_ for _ in ()).throw(DeviceError("no CUDA device (test)")))
    torch._dynamo.reset()
    w = torch.randn(16, 16)

    def step(x: Any, cache: Any) -> Any:
        h = torch.nn.functional.silu(x @ w) * 2.0 + 1.0
        if writes_outside:
            cache[:, :16].add_(h)
            return cache * 0.5
        h.mul_(0.5)
        return h + cache[:, :16]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CaptureWarning)
        fast = compile(step, example_inputs=(torch.randn(4, 16), torch.zeros(4, 32)))
    said = [str(c.message) for c in caught if "writes in place" in str(c.message)]
    if writes_outside:
        assert len(said) == 1 and "add_ of" in said[0] and "cache" in said[0]
        assert any("cache" in x for x in fast.summary()["writes_in_place"])
    else:
        assert said == [] and fast.summary()["writes_in_place"] == []


def test_python_operators_named_like_in_place_ones_do_not_stop_the_first_run() -> None:
    """``operator.and_`` (a transformers model's attention mask) ends in "_" only to avoid a keyword:
    it writes nothing, so the graph still runs first and the regions PyTorch wins are inlined;
    ``&=`` (``operator.iand``), a ``setitem`` and a method like ``add_`` do write in place."""
    import operator

    from prism.capture import outer

    g = torch.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    nodes = [g.call_function(operator.and_, (a, b)), g.call_function(operator.or_, (a, b)),
             g.call_function(operator.iand, (a, b)), g.call_function(operator.setitem, (a, 0, b)),
             g.call_method("add_", (a, 1)), g.call_function(torch.add, (a, b))]
    assert [outer.writes_in_place(n) for n in nodes] == [False, False, True, True, True, False]


def test_a_kernel_that_disagrees_with_pytorch_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    class Wrong:
        def __init__(self, graph: Any) -> None:
            self.summary: dict[str, Any] = {}
            self.shapes = [t.shape for t in graph.outputs]

        def __call__(self, *views: Any) -> Any:
            outs = tuple(torch.zeros(s, dtype=views[0].dtype) for s in self.shapes)
            return outs if len(outs) > 1 else outs[0]

    _fake_pipeline(monkeypatch, lambda graph, **kw: Wrong(graph))
    torch._dynamo.reset()
    m = _layer()
    ins = layer_inputs(SMALL, 1, 1, 3, device="cpu", dtype=torch.float32)
    with pytest.warns(CaptureWarning, match="differs from PyTorch's"):
        fast = compile(m, example_inputs=ins, options=EAGER)
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=0, atol=0)
    assert fast.summary()["regions_in_prism"] == 0


class _Exact:
    """A stand-in kernel that computes the region's graph in float64 (always within tolerance)."""

    def __init__(self, graph: Any) -> None:
        self.graph, self.summary = graph, {"plan_source": "searched", "best_us": 1.0}

    def __call__(self, *views: Any) -> Any:
        got = self.graph.evaluate({t.name: v.double().numpy() for t, v in zip(self.graph.inputs, views, strict=True)})
        outs = tuple(torch.from_numpy(got[t.name]).to(views[0].dtype) for t in self.graph.outputs)
        return outs if len(outs) > 1 else outs[0]


@pytest.mark.parametrize(("prism_us", "torch_us", "in_prism"), [(5.0, 9.0, 5), (9.0, 5.0, 0), (9.8, 10.0, 0)])
def test_each_region_runs_where_it_is_faster(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                             prism_us: float, torch_us: float, in_prism: int) -> None:
    """The runner times a checked kernel against the region's PyTorch ops and keeps the faster (no
    warning: PyTorch winning is not a failure); the summary says both times."""
    _fake_pipeline(monkeypatch, lambda graph, **kw: _Exact(graph))
    monkeypatch.setattr(RegionRunner, "_times", lambda self, entry, inputs: (prism_us, torch_us))
    torch._dynamo.reset()
    m = _layer()
    ins = layer_inputs(SMALL, 1, 1, 3, device="cpu", dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        fast = compile(m, example_inputs=ins, options=EAGER)
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=1e-4, atol=1e-4)
    s = fast.summary()
    assert s["regions"] == 5 and s["regions_in_prism"] == in_prism
    # the stand-in reports a searched plan: what runs in Prism runs in generated kernels
    assert s["flops_fraction_generated"] == s["flops_fraction_prism"] and (s["flops_fraction_prism"] > 0.9) == (in_prism > 0)
    why = [o[1] for r in s["region_outcomes"] for o in r["outcomes"].values()]
    # a gain under max(0.3 us, 2%) does not pay for the fusion Inductor loses at the region's edges
    want = "PyTorch is faster" if torch_us < prism_us else "PyTorch is as fast"
    assert all(f"PyTorch {torch_us:.1f} us" in w if in_prism else want in w for w in why)
    err = capsys.readouterr().err  # a line as each region starts and ends (first calls take minutes)
    assert err.count("searching and tuning") == 5 and err.count("prism: region") == 10


def test_inductor_compiles_the_graph_around_the_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    """By default the nodes outside regions (the KV-cache cat, the rotary neg) run as Inductor compiles
    them. The graph runs once on the example inputs first: the regions whose Prism kernel wins there
    (here the two with projections) are each one opaque call of ``prism::region``, the others are
    inlined for Inductor to fuse. At three batch sizes (Dynamo recompiles with a dynamic batch, whose
    size reaches the backend as a SymInt) the layer matches eager."""
    import prism.capture.outer as outer

    _fake_pipeline(monkeypatch, lambda graph, **kw: _Exact(graph))
    monkeypatch.setattr(RegionRunner, "_times", lambda self, entry, inputs: (1.0, 2.0) if "linear" in self.record.ops
                        else (2.0, 1.0))
    compiled: list[int] = []
    real = outer.inductor
    monkeypatch.setattr(outer, "inductor", lambda gm, ex: compiled.append(
        sum(n.target is outer.region_op() for n in gm.graph.nodes)) or real(gm, ex))
    torch._dynamo.reset()
    m = _layer()
    report = CaptureReport()
    fast = torch.compile(m, backend=lambda gm, ex: prism_backend(gm, ex, report=report))
    with torch.no_grad():
        for batch in (2, 3, 5):
            ins = layer_inputs(SMALL, batch, 1, 4, device="cpu", dtype=torch.float32)
            torch.testing.assert_close(fast(*ins), m(*ins), rtol=1e-4, atol=1e-4)
    assert len(compiled) >= 2 and all(n == 2 for n in compiled)  # a static graph, then a dynamic one
    s = report.summary()
    assert s["regions"] == 5 * len(compiled) and s["regions_in_prism"] == 2 * len(compiled)
    for r in s["region_outcomes"]:
        assert r["outcomes"] and all(o[0] == ("prism" if "linear" in r["ops"] else "pytorch")
                                     for o in r["outcomes"].values())


@pytest.mark.parametrize("graph_alone_faster", [False, True])
def test_the_graph_runs_where_it_is_faster_whole(monkeypatch: pytest.MonkeyPatch, graph_alone_faster: bool) -> None:
    """Regions whose kernels beat their own Inductor kernels can still lose the whole graph (Inductor
    fuses across their edges): the backend times the graph with Prism's regions against Inductor's
    graph alone and returns the faster; when Inductor's wins, the summary says so for each region."""
    import prism.capture.outer as outer

    _fake_pipeline(monkeypatch, lambda graph, **kw: _Exact(graph))
    monkeypatch.setattr(RegionRunner, "_times", lambda self, entry, inputs: (1.0, 2.0))
    monkeypatch.setattr(outer, "on_gpu", lambda args: True)  # CPU tensors here: timed as if on a GPU
    monkeypatch.setattr(outer, "whole_times", lambda a, b, args: (9.0, 7.0) if graph_alone_faster else (7.0, 9.0))
    torch._dynamo.reset()
    m = _layer()
    ins = layer_inputs(SMALL, 2, 1, 4, device="cpu", dtype=torch.float32)
    fast = compile(m, example_inputs=ins)
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=1e-4, atol=1e-4)
    s = fast.summary()
    assert s["graph_times_us"] == [{"with_prism": 9.0, "inductor": 7.0} if graph_alone_faster
                                   else {"with_prism": 7.0, "inductor": 9.0}]
    assert s["regions_in_prism"] == (0 if graph_alone_faster else 5)
    why = [d for r in s["region_outcomes"] for _, d in r["outcomes"].values()]
    assert all(("Inductor alone: 7.0 us against 9.0 us" in w) == graph_alone_faster for w in why)


def test_a_dropped_graph_frees_its_region_runners(monkeypatch: pytest.MonkeyPatch) -> None:
    """``prism::region`` finds runners through a weak table; the compiled graph holds them, so when
    Dynamo drops the graph its regions' kernels go too (no runner outlives what calls it)."""
    import gc

    import prism.capture.outer as outer

    _fake_pipeline(monkeypatch, lambda graph, **kw: _Exact(graph))
    monkeypatch.setattr(RegionRunner, "_times", lambda self, entry, inputs: (1.0, 2.0))
    torch._dynamo.reset()
    gc.collect()
    before = set(outer.RUNNERS.keys())
    m = _layer()
    ins = layer_inputs(SMALL, 2, 1, 4, device="cpu", dtype=torch.float32)
    fast = compile(m, example_inputs=ins)
    with torch.no_grad():
        torch.testing.assert_close(fast(*ins), m(*ins), rtol=1e-4, atol=1e-4)
    held = set(outer.RUNNERS.keys()) - before
    assert len(held) == 5  # the five regions of the graph Inductor compiled, each a call
    del fast
    torch._dynamo.reset()
    gc.collect()
    assert not held & set(outer.RUNNERS.keys())
    with pytest.raises(CaptureError, match="runner is gone"):
        outer._live(max(held))


def _replays_as_called(call: Any, got: Any) -> None:
    """``call()`` captured in a CUDA graph and replayed gives what the call gave."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call()
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(captured, got)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_llama_layer_decode_runs_in_prism_kernels_and_replays_in_a_cuda_graph(dtype: Any) -> None:
    torch._dynamo.reset()
    m = _layer(dtype, "cuda")
    ins = layer_inputs(SMALL, 2, 1, 16, device="cuda", dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)  # every region must run in Prism
        fast = compile(m, example_inputs=ins, options=CaptureOptions(samples=4, compare=False))
    s = fast.summary()
    assert s["regions_in_prism"] == s["regions"] == 5 and s["flops_fraction_prism"] > 0.9
    with torch.no_grad():
        want, got = m(*ins), fast(*ins)
        tol = 2e-2 if dtype == torch.float16 else 5e-2
        assert relative_error(got.double().cpu().numpy(), want.double().cpu().numpy()) < tol
        _replays_as_called(lambda: fast(*ins), got)
    assert any(o is Outcome.PRISM for g in fast.report.graphs for r in g.regions for o, _ in r.outcomes.values())


@pytest.mark.gpu
def test_the_default_capture_compares_regions_and_the_whole_graph_on_the_gpu() -> None:
    """Default options on the GPU: each region is timed against its own Inductor kernels, the graph
    with the winners against Inductor's graph alone; whichever runs is right and replays in a CUDA graph."""
    torch._dynamo.reset()
    m = _layer(torch.float16, "cuda")
    ins = layer_inputs(SMALL, 2, 1, 16, device="cuda", dtype=torch.float16)
    fast = compile(m, example_inputs=ins, options=CaptureOptions(samples=4, time_budget=20.0))
    s = fast.summary()
    why = [d for r in s["region_outcomes"] for _, d in r["outcomes"].values()]
    assert len(why) == 5 and all("PyTorch" in w or "Inductor alone" in w for w in why), why  # every region compared
    if s["regions_in_prism"] or any("Inductor alone" in w for w in why):  # a graph with Prism's regions was timed
        assert set(s["graph_times_us"][0]) == {"with_prism", "inductor"}
    with torch.no_grad():
        want, got = m(*ins), fast(*ins)
        assert relative_error(got.double().cpu().numpy(), want.double().cpu().numpy()) < 2e-2
        _replays_as_called(lambda: fast(*ins), got)


def _hf(device: str, dtype: Any) -> Any:
    """A two-layer transformers Llama of SMALL's sizes, random weights (no download)."""
    pytest.importorskip("transformers")
    from bench.capture_models import hf_llama

    torch.manual_seed(0)
    model = hf_llama(2, SMALL, vocab=256).to(device, dtype).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return lambda ids: model(input_ids=ids).logits


def test_a_transformers_llama_is_captured_with_its_regions_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' LlamaForCausalLM (random weights, one token and a short prompt): its norms,
    projections, rotary products and MLPs become regions; the output is eager's when those run
    their PyTorch ops."""
    calls = _record(monkeypatch)
    torch._dynamo.reset()
    fn = _hf("cpu", torch.float32)
    for length in (1, 5):
        ids = torch.randint(0, 256, (1, length))
        report = CaptureReport()
        backend = functools.partial(prism_backend, report=report, options=EAGER)
        fast = torch.compile(fn, backend=backend)
        with torch.no_grad():
            torch.testing.assert_close(fast(ids), fn(ids), rtol=0, atol=0)
        ops = [r.ops for g in report.graphs for r in g.regions]
        assert sum(o.count("linear") for o in ops) >= 2 * 7  # q, k, v, o, gate, up, down of both layers
        assert any("silu" in o and "rsqrt" in o for o in ops)
        # each layer's norm and q/k/v projections are a region of their own (partition.split_blocks): the
        # second layer's is not merged with the first layer's MLP
        assert sum(o.count("linear") == 3 and "rsqrt" in o and "silu" not in o for o in ops) == 2, ops
        torch._dynamo.reset()
    assert calls


def test_a_transformers_qwen2_maps_every_region_to_its_pytorch_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model family the capture was not written for: transformers' Qwen2 (biased q/k/v projections,
    tied embeddings off), random weights, one token and a short prompt. Its regions are found (norms,
    biased projections, rotary products, MLPs), each bound Prism program computes its region's
    outputs in float64, and the compiled model's output is eager's."""
    pytest.importorskip("transformers")
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    conf = Qwen2Config(vocab_size=256, hidden_size=SMALL.hidden, intermediate_size=SMALL.ffn, num_hidden_layers=2,
                       num_attention_heads=SMALL.heads, num_key_value_heads=SMALL.kv_heads, rms_norm_eps=SMALL.eps,
                       max_position_embeddings=256, use_cache=False, attn_implementation="sdpa")
    model = Qwen2ForCausalLM(conf).eval()
    biases = [m.bias for m in model.modules() if isinstance(m, torch.nn.Linear) and m.bias is not None]
    assert len(biases) == 2 * 3  # q, k and v of both layers
    for p in model.parameters():
        p.requires_grad_(False)
    for b in biases:
        b.normal_()  # initialised to zero: a mapping that dropped them would still match

    def fn(ids: Any) -> Any:
        return model(input_ids=ids).logits

    calls = _record(monkeypatch)
    for length in (1, 5):
        torch._dynamo.reset()
        calls.clear()
        ids = torch.randint(0, 256, (1, length))
        report = CaptureReport()
        fast = torch.compile(fn, backend=functools.partial(prism_backend, report=report, options=EAGER))
        with torch.no_grad():
            torch.testing.assert_close(fast(ids), fn(ids), rtol=0, atol=0)
        ops = [r.ops for g in report.graphs for r in g.regions]
        assert sum(o.count("linear") for o in ops) >= 2 * 7  # q, k, v, o, gate, up, down of both layers
        assert any("silu" in o and "rsqrt" in o for o in ops)
        assert calls and len(calls) == len(ops)
        for runner, inputs in calls:
            program = bind(runner.spec, [tuple(t.shape) for t in inputs], "float32")
            got = evaluate(program, [t.double().numpy() for t in inputs])
            for a, b in zip(got, runner.eager(*inputs), strict=True):
                assert relative_error(a, b.double().numpy()) < 1e-5, runner.record.ops


@pytest.mark.gpu
def test_a_transformers_llama_runs_and_replays_on_the_gpu() -> None:
    """Default options on the GPU: the model's output is eager's within float16 rounding, and the
    compiled forward replays in a CUDA graph."""
    torch._dynamo.reset()
    fn = _hf("cuda", torch.float16)
    ids = torch.randint(0, 256, (1, 1), device="cuda")
    fast = compile(fn, example_inputs=(ids,), options=CaptureOptions(samples=4, time_budget=20.0))
    with torch.no_grad():
        want, got = fn(ids), fast(ids)
        assert relative_error(got.double().cpu().numpy(), want.double().cpu().numpy()) < 2e-2
        _replays_as_called(lambda: fast(ids), got)
    assert fast.summary()["regions"] >= 4


def test_a_second_batch_size_binds_the_same_structure_at_new_shapes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo recompiles with a dynamic batch; each region binds a Graph of the same size-free
    structure (one search serves both) at the new shapes, and the output is still PyTorch's."""
    torch._dynamo.reset()
    calls = _record(monkeypatch)
    m = _layer()
    fast = torch.compile(m, backend=lambda gm, ex: prism_backend(gm, ex, report=CaptureReport(),
                                                                          options=EAGER))
    keys: dict[tuple[str, ...], set[str]] = {}
    with torch.no_grad():
        for batch in (2, 3, 5):
            ins = layer_inputs(SMALL, batch, 1, 4, device="cpu", dtype=torch.float32)
            torch.testing.assert_close(fast(*ins), m(*ins), rtol=0, atol=0)
    for runner, inputs in calls:
        g = bind(runner.spec, [tuple(t.shape) for t in inputs], "float32").graph
        keys.setdefault(runner.record.ops, set()).add(g.structure_key())
    assert {t.shape[0] for _, ins in calls for t in ins[:1]} >= {2, 3, 5}
    assert all(len(k) == 1 for k in keys.values()), keys
