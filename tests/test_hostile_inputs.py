"""Careless or hostile values at every entrance (Graph API, evaluate, superoptimize, tune, every
command's flags) get a typed error naming the value, or a one-line command error: never a bare
exception or a traceback (issue 16). Also: a tuning time budget never hangs."""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import prism
from prism import cli, pipeline, plans, workloads
from prism.errors import GraphError, InputError, OptionError, PrismError, ShapeError
from prism.ir import KernelGraph
from prism.options import check_count, check_seconds, check_seed, check_target
from prism.tune import InterpreterBackend, tune
from prism.tune import cli as tune_cli


def program() -> tuple[prism.Graph, prism.Tensor]:
    g = prism.Graph()
    return g, g.input((4, 8), dtype="float32", name="a")


# ------------------------------------------------------------------ Graph API


@pytest.mark.parametrize("shape", [b"ab", bytearray(b"ab"), "ab", 8, None, 8.0, {4, 8}])
def test_input_shape_must_be_a_sequence_of_ints(shape: Any) -> None:
    with pytest.raises(ShapeError, match="shape"):
        prism.Graph().input(shape)


@pytest.mark.parametrize("eps", [10**400, float("nan"), float("inf"), "x", None, -1.0])
def test_rms_norm_eps_is_checked(eps: Any) -> None:
    g, a = program()
    with pytest.raises(GraphError, match="rms_norm|add_scalar"):
        g.rms_norm(a, eps=eps)


def test_rms_norm_takes_numpy_scalars() -> None:
    g, a = program()
    g.output(g.rms_norm(a, eps=np.float32(1e-5)))
    x = np.random.default_rng(0).standard_normal((4, 8))
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + np.float64(np.float32(1e-5)))
    np.testing.assert_allclose(g.evaluate({"a": x})["O"], want, rtol=1e-12)


@pytest.mark.parametrize("inputs", [None, "abc", b"abc", 3, object()])
def test_evaluate_refuses_what_is_not_a_mapping_or_sequence(inputs: Any) -> None:
    g, a = program()
    g.output(g.exp(a))
    with pytest.raises(InputError, match="expected a mapping"):
        g.evaluate(inputs)


@pytest.mark.parametrize("value", [np.full((4, 8), "x"), np.ones((4, 8)) * 1j, np.full((4, 8), None),
                                   [[1.0] * 8] * 3 + [[1.0] * 7]])
def test_evaluate_refuses_values_that_are_not_real_numbers(value: Any) -> None:
    g, a = program()
    g.output(g.exp(a))
    with pytest.raises(InputError, match="'a'.*not (real numbers|an array of numbers)"):
        g.evaluate({"a": value})


HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8), st.binary(max_size=8),
    st.complex_numbers(), st.lists(st.integers(min_value=-3, max_value=2**40), max_size=5),
    st.lists(st.one_of(st.integers(), st.lists(st.floats(), max_size=3), st.text(max_size=2)), max_size=4),
    st.sampled_from([np.float32(2), np.int64(1), np.float16("inf"), np.array(2.0), np.ones((2, 2)), object()]),
)

OPS = ["input_shape", "input_dtype", "input_name", "scale", "add_scalar", "sub", "div", "sum", "max", "mean",
       "softmax_dim", "softmax_safe", "rms_norm", "output_name", "output_tensor", "exp", "matmul", "evaluate"]


def apply(op: str, value: Any) -> None:
    g, a = program()
    match op:
        case "input_shape":
            g.input(value)
        case "input_dtype":
            g.input((4,), dtype=value)
        case "input_name":
            g.input((4,), name=value)
        case "scale" | "add_scalar" | "sub" | "div":
            getattr(g, op)(a, value)
        case "sum" | "max" | "mean" | "softmax_dim":
            getattr(g, op.removesuffix("_dim"))(a, value)
        case "softmax_safe":
            g.softmax(a, safe=value)
        case "rms_norm":
            g.rms_norm(a, eps=value)
        case "output_name":
            g.output(a, value)
        case "output_tensor" | "exp" | "matmul":
            {"output_tensor": g.output, "exp": g.exp, "matmul": lambda v: g.matmul(a, v)}[op](value)
        case "evaluate":
            g.output(g.exp(a))
            g.evaluate({"a": value})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(OPS), value=HOSTILE)
def test_graph_api_raises_only_typed_errors(op: str, value: Any) -> None:
    try:
        apply(op, value)
    except PrismError as e:
        assert str(e)  # names the op and the value
    # anything else (TypeError, OverflowError, ValueError, AttributeError) fails the test


# ------------------------------------------------------------------ options of superoptimize / tune


@pytest.mark.parametrize(("check", "value"), [
    (lambda v: check_count("samples", v, "f"), 0), (lambda v: check_count("samples", v, "f"), -3),
    (lambda v: check_count("samples", v, "f"), 2.5), (lambda v: check_count("samples", v, "f"), True),
    (lambda v: check_count("samples", v, "f"), "8"), (lambda v: check_seed(v, "f"), -1),
    (lambda v: check_seed(v, "f"), 2**64), (lambda v: check_seed(v, "f"), 1.0),
    (lambda v: check_seconds("time_budget", v, "f"), float("nan")),
    (lambda v: check_seconds("time_budget", v, "f"), -1), (lambda v: check_seconds("time_budget", v, "f"), 10**400),
    (lambda v: check_seconds("time_budget", v, "f"), "60"), (lambda v: check_target(v, "f"), "sm_xx"),
    (lambda v: check_target(v, "f"), "sm_80; rm -rf"), (lambda v: check_target(v, "f"), 80),
])
def test_option_checks_name_the_bad_value(check: Any, value: Any) -> None:
    with pytest.raises(OptionError, match=r"^f: "):
        check(value)


def test_option_checks_accept_good_values() -> None:
    assert check_count("samples", np.int64(8), "f") == 8
    assert check_seed(0, "f") == 0 and check_seconds("t", None, "f") is None and check_seconds("t", 0, "f") == 0.0
    assert check_target(None, "f") is None and check_target("sm_90", "f") == "sm_90"


@pytest.mark.parametrize("kwargs", [{"samples": 0}, {"samples": "x"}, {"seed": -1}, {"time_budget": float("nan")},
                                    {"time_budget": -1}, {"target": "sm_xx"}, {"search_budget": float("inf")},
                                    {"example_inputs": {"zz": np.ones(3)}}])
def test_superoptimize_refuses_bad_options_before_searching(monkeypatch: pytest.MonkeyPatch, kwargs: Any) -> None:
    def no_search(*args: Any, **kw: Any) -> Any:
        raise AssertionError("searched before checking the options")

    monkeypatch.setattr(pipeline, "search_and_verify", no_search)
    g, a = program()
    g.output(g.exp(a))
    with pytest.raises((OptionError, InputError)):
        pipeline.superoptimize(g, progress=False, **kwargs)


@pytest.mark.parametrize("graph", ["g", None, 3])
def test_superoptimize_refuses_what_is_not_a_graph(graph: Any) -> None:
    with pytest.raises(OptionError, match="expected a prism.Graph"):
        pipeline.superoptimize(graph)


GRAPH = workloads.rmsnorm_linear(n=8, d=32)
TEMPLATES: list[KernelGraph] = [plans.rmsnorm_linear_plan(GRAPH), plans.rmsnorm_linear_2d_plan(GRAPH)]


@pytest.mark.parametrize("kwargs", [{"samples": 0}, {"seed": -2}, {"time_budget": float("nan")}, {"arch": "sm_1"}])
def test_tune_refuses_bad_options(kwargs: Any) -> None:
    with pytest.raises(OptionError):
        tune(GRAPH, TEMPLATES, backend=InterpreterBackend(lambda kg: 1.0), **kwargs)


def test_time_budget_never_hangs_with_compiles_still_queued() -> None:
    """The old tuner shut its pool down with cancel_futures=True while ``as_completed`` still waited on
    the cancelled futures, which never notify it: with one compile thread and slow compiles, the
    queue is never empty when the budget runs out, so it hung every time."""

    class SlowCompiles(InterpreterBackend):
        compiled = 0

        def compile(self, kg: KernelGraph) -> Any:
            self.compiled += 1
            time.sleep(0.0 if self.compiled == 1 else 0.25)  # the queue outlives the first timing
            return super().compile(kg)

    done: list[Any] = []
    worker = threading.Thread(daemon=True, target=lambda: done.append(
        tune(GRAPH, TEMPLATES, samples=40, seed=0, jobs=1, time_budget=0.0, refine=0,
             backend=SlowCompiles(lambda kg: 1.0))))
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "tune(time_budget=0) hangs"
    res = done[0]
    assert res.counts["timed"] >= 1 and res.counts["skipped"] >= 1 and math.isfinite(res.time_us)


# ------------------------------------------------------------------ commands


@pytest.fixture
def no_pipeline(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: lambda *a, **k: calls.append(k))
    return calls


BAD_FLAGS = [
    ["optimize", "swiglu", "--samples", "0"], ["optimize", "swiglu", "--samples", "-5"],
    ["optimize", "swiglu", "--samples", "abc"], ["optimize", "swiglu", "--samples", "1e3"],
    ["optimize", "swiglu", "--seed", "-1"], ["optimize", "swiglu", "--time-budget", "nan"],
    ["optimize", "swiglu", "--time-budget", "-1"], ["optimize", "swiglu", "--time-budget", "inf"],
    ["optimize", "swiglu", "--target", "sm_xx"], ["optimize", "swiglu", "--target", "sm_80\nx"],
    ["library", "build", "--jobs", "0"], ["library", "build", "--samples", "-1"],
    ["library", "build", "--arch", "sm_xx"], ["demo", "swiglu", "--samples", "0"],
    ["optimize", "nope"], ["nope"], ["library"], ["emit", "swiglu_d1024"],
]


@pytest.mark.parametrize("argv", BAD_FLAGS, ids=lambda a: " ".join(a))
def test_bad_flags_are_one_line_exit_2_before_anything_runs(
        argv: list[str], no_pipeline: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error:" in err
    assert no_pipeline == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flag=st.sampled_from(["--samples", "--seed", "--time-budget", "--target"]),
       text=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=12)
       .filter(lambda t: not t.startswith("-")))
def test_optimize_flags_never_traceback(flag: str, text: str, no_pipeline: list[Any],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    no_pipeline.clear()
    try:
        rc = cli.main(["optimize", "swiglu", flag, text])
    except SystemExit as e:
        rc = e.code  # type: ignore[assignment]
    err = capsys.readouterr().err
    assert rc in (0, 2)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and no_pipeline == []
    else:  # accepted: the value reached the pipeline checked and normalised
        (kw,) = no_pipeline
        check_count("samples", kw["samples"], "t")
        check_seed(kw["seed"], "t")
        check_seconds("time_budget", kw["time_budget"], "t")
        check_target(kw["target"], "t")


def test_optimize_without_a_gpu_is_not_success(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def no_gpu(*a: Any, **k: Any) -> Any:
        raise prism.errors.DeviceError("program: tuning needs an NVIDIA GPU with CuPy")

    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: no_gpu)
    assert cli.main(["optimize", "swiglu"]) == tune_cli.EXIT_NO_GPU != 0
    assert "no usable GPU" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["file", "file_below"])
def test_emit_to_a_bad_folder_is_one_line(tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    out = blocker if bad == "file" else blocker / "below"
    assert cli.main(["emit", "swiglu_d1024", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "prism emit: error:" in err and str(blocker) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def test_an_os_error_in_any_command_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    def unreadable(*a: Any, **k: Any) -> Any:
        raise PermissionError(13, "Permission denied", "/somewhere/spec.toml")

    monkeypatch.setattr(tune_cli, "_superoptimize", lambda: unreadable)
    assert cli.main(["optimize", "swiglu"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "prism optimize: error: Permission denied '/somewhere/spec.toml'"
