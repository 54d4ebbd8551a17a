"""Random programs (``bench.fuzz``) through ``superoptimize`` on the CPU, the generated plans run in the
emulator of the generated code: each returns a plan that computes the program (docs/hardening.md,
"Random programs"). A sample of seeds that covers [h, n, d] rows, transposes of computed values,
products of two computed values, programs of two outputs, outputs that are transposes (returned as views)
and float32 and bfloat16 inputs runs in CI;
``-m slow`` runs 60 seeds."""

from __future__ import annotations

import pytest

from bench.fuzz import FAMILIES, random_program, run_one

# seeds drawn once and kept for what their programs hold (asserted below) and their speed (< 2.5 s each)
SAMPLE = (41, 46, 54, 62, 71, 73, 78, 87, 117, 139)


def _features(seed: int) -> set[str]:
    g = random_program(seed)
    kinds = {n.kind.value for n in g.nodes}
    out = {"rows3d"} if len(g.inputs[0].shape) == 3 else set()
    out |= {k for k in ("transpose", "matmul") if k in kinds}
    out |= {g.inputs[0].dtype} - {"float16"}
    out |= {"output transpose"} if any(g.nodes[i].kind.value == "transpose" for _, i in g.output_indices) else set()
    return out | ({"two outputs"} if len(g.outputs) == 2 else set())


def test_the_sample_covers_what_it_is_kept_for() -> None:
    seen = set().union(*(_features(s) for s in SAMPLE))
    assert seen == {"rows3d", "transpose", "matmul", "two outputs", "float32", "bfloat16", "output transpose"}
    assert any(_features(s) >= {"rows3d", "transpose", "matmul"} for s in SAMPLE)


def test_programs_are_drawn_the_same_way_every_time() -> None:
    assert random_program(41).structure_hash() == random_program(41).structure_hash()
    assert len({random_program(s).structure_hash() for s in range(20)}) == 20


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_draws_the_same_program_for_a_seed_and_many_programs_over_seeds(family: str) -> None:
    draw = FAMILIES[family]
    for sizes in ("small", "large", "model"):
        assert draw(7, sizes).structure_hash() == draw(7, sizes).structure_hash()
        assert len({draw(s, sizes).structure_hash() for s in range(20)}) >= 15


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_seed_draws_a_program_the_graph_api_accepts(family: str) -> None:
    """Attention seed 38 at the large and model sizes drew two projections in a row, the second from the
    model width: the draw itself raised a ShapeError, which stopped a whole fuzz run."""
    for sizes in ("small", "large", "model"):
        for seed in range(60):
            FAMILIES[family](seed, sizes).check_complete()


def test_attention_programs_read_keys_of_another_length_and_mlp_programs_a_hidden_width() -> None:
    att = [FAMILIES["attention"](s) for s in range(20)]
    assert all(g.inputs[0].name == "Q" and g.inputs[1].shape[-1] == g.inputs[0].shape[-1] for g in att)
    assert sum(g.inputs[1].shape[-2] != g.inputs[0].shape[-2] for g in att) >= 15
    assert any(any(t.name == "M" for t in g.inputs) for g in att)
    mlp = [FAMILIES["mlp"](s) for s in range(20)]
    assert all(sum(n.kind.value == "matmul" for n in g.nodes) >= 1 for g in mlp)
    assert any(any(n.kind.value == "transpose" for n in g.nodes) for g in mlp)


# a quick seed of each shaped family (docs/fuzz-2026-12-05-{attention,mlp,block}.json: 0.5-7 s each there)
@pytest.mark.parametrize(("family", "seed"), [("attention", 10), ("mlp", 15), ("block", 12)])
def test_a_shaped_random_program_gets_a_plan_that_computes_it(family: str, seed: int) -> None:
    out = run_one(seed, family=family)
    assert out.result == "plan", out


def test_parts_padded_to_different_tails_leave_the_program_its_other_plans() -> None:
    """Found by the attention-shaped programs: keys of 24 positions, and two parts of the program tuned
    to plans padded to 32 and to 64; stitching them raised an IRError out of ``superoptimize``. Such
    stitchings are now left out (``partition.stitchable``) and the other candidates compete."""
    out = run_one(0, family="attention")
    assert out.result == "plan", out


@pytest.mark.parametrize("seed", SAMPLE)
def test_a_random_program_gets_a_plan_that_computes_it(seed: int) -> None:
    out = run_one(seed)
    assert out.result == "plan", out


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_random_programs_get_plans_that_compute_them(seed: int) -> None:
    out = run_one(seed)
    assert out.result == "plan", out


def test_the_check_of_the_returned_plan_tells_a_wrong_one() -> None:
    from bench.fuzz import _checked
    from prism.graph import Graph
    from prism.pipeline import predefined_plan

    def program(op: str) -> Graph:
        g = Graph()
        g.output(getattr(g, op)(g.input((4, 16), "float16", "X")), "O")
        return g

    assert _checked(program("exp"), predefined_plan(program("exp"), "p"), 0, "predefined")[0] == "plan"
    assert _checked(program("exp"), predefined_plan(program("neg"), "p"), 0, "predefined")[0] == "wrong"


def test_a_bfloat16_program_is_sized_like_its_float16_twin() -> None:
    """Found by the random programs: the shared-memory estimate of a bfloat16 load asked NumPy for the
    dtype's size (NumPy has no bfloat16), so every matmul-free bfloat16 program crashed the search
    with a TypeError."""
    from prism import pipeline
    from prism.codegen.resources import resources
    from prism.codegen.sizes import generated_sizes
    from prism.graph import Graph

    def program(dtype: str) -> Graph:
        g = Graph()
        x = g.input((4, 64), dtype, "X")
        g.output(g.mul(x, g.sigmoid(x)), "O")
        return g

    uses = []
    for dtype in ("float16", "bfloat16"):
        out = pipeline.search_and_verify(program(dtype), program=f"silu_{dtype}", progress=False, cache=False)
        t = out.of(pipeline.PlanSource.SEARCHED)[0]
        sizes, _ = next(generated_sizes(t))
        uses.append(resources(t.instantiate(sizes)))
    assert uses[0] == uses[1]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_the_emulator_backend_holds_every_written_tensor_in_its_buffers_dtype(dtype: str) -> None:
    """Found on the GPU, not here: a float32 program's predefined plan handed PyTorch's ops float16
    buffers (error 40x the bound). The fuzz backend now rounds what each kernel writes to its buffer's
    dtype, as GPU memory holds it, so a plan whose buffers are narrower than its program fails its check
    on the CPU too."""
    from dataclasses import replace

    import numpy as np

    from bench.fuzz import EmulatorBackend
    from prism.graph import Graph
    from prism.partition import predefined_plan
    from prism.reference import relative_error, round_to_dtype
    from prism.tune.tolerance import tolerance
    from prism.tune.tuner import default_scales, random_inputs

    g = Graph()
    x = g.input((16, 256), dtype, "X")
    g.output(g.add(g.mul(x, g.sigmoid(x)), g.input((1, 256), dtype, "B")), "O")
    backend, kg = EmulatorBackend(), predefined_plan(g, "silu_bias")
    ins = random_inputs(g, default_scales(g), 7)
    kernel = backend.compile(kg)
    out = backend.run(kernel, ins)["O"]
    assert np.array_equal(out, round_to_dtype(out, dtype))
    assert relative_error(out, g.evaluate(ins)["O"]) < tolerance(g)
    lowered = kernel[1]
    narrow = {**lowered.dtypes, **{n: "float16" for n in lowered.intermediates}}  # the buffers of the bug
    wrong = backend.run((kg, replace(lowered, dtypes=narrow)), ins)["O"]
    assert (relative_error(wrong, g.evaluate(ins)["O"]) >= tolerance(g)) == (dtype == "float32")


def test_a_gpu_run_reports_both_times_of_the_inductor_comparison() -> None:
    from bench.fuzz import _versus

    assert _versus({"inductor": {"generated_us": 1.25, "inductor_us": 1.1}}) == \
        " (generated 1.25 us, inductor 1.10 us)"
    assert _versus({"inductor": {"generated_us": 1.25, "inductor_us": 1.1, "eager_us": 2.0}}) == \
        " (generated 1.25 us, inductor 1.10 us, eager 2.00 us)"
    assert _versus({"inductor": {"generated_us": None, "why": "no torch"}}) == ""
    assert _versus({}) == ""
