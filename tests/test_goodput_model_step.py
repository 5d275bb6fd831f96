"""PG from a declared model: a job may give model_flops_per_step and gradient_bytes (with its topology) instead of
a measured ideal step time; the ideal is then compute at peak plus the modelled all-reduce on its slice shape."""

from __future__ import annotations

import json

import pytest

from tpufleet.collectives.cost import ideal_step_time
from tpufleet.shapes import parse_shape

FLOPS, GRADS = 3.0e17, 2.0e9  # one step of a 64-chip job: ~17 ms at peak, plus a 2 GB gradient all-reduce


def _log(tmp_path, name: str, **job) -> str:
    records = [{"type": "job", "job": "j", "accelerator": "tpu-v4", "chips": 64, "phase": "training", **job}]
    t = 1767571200.0
    records.append({"type": "event", "job": "j", "time": t, "event": "job_start"})
    for step in range(1, 201):
        records.append({"type": "event", "job": "j", "time": t + 10 + step * 0.1, "event": "step_start", "step": step})
    records.append({"type": "event", "job": "j", "time": t + 40, "event": "job_end"})
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return str(path)


def test_declared_model_gives_the_modelled_ideal_step(cli, tmp_path):
    ideal = ideal_step_time(parse_shape("4x4x4"), FLOPS, GRADS)
    assert ideal > FLOPS / (64 * 275e12)  # the all-reduce adds to the compute
    declared = _log(tmp_path, "model.jsonl", topology="4x4x4", model_flops_per_step=FLOPS, gradient_bytes=GRADS)
    measured = _log(tmp_path, "ideal.jsonl", topology="4x4x4", ideal_step_s=ideal)
    a = cli("goodput-report", declared, "-o", "json", state=False)
    b = cli("goodput-report", measured, "-o", "json", state=False)
    assert a.code == b.code == 0, (a.err, b.err)
    (ja,), (jb,) = a.json["jobs"], b.json["jobs"]
    assert ja["pg"] == pytest.approx(jb["pg"], rel=1e-12) and ja["pg_basis"] == "declared"


@pytest.mark.parametrize(("topology", "field"), [(None, "topology"), ("four-by-four", "topology"), ("4x4x8", "chips")])
def test_declared_model_needs_the_slice_shape(cli, tmp_path, topology, field):
    path = _log(tmp_path, "bad.jsonl", topology=topology, model_flops_per_step=FLOPS)
    r = cli("goodput-report", path, state=False)
    assert r.code == 2 and f"field {field}" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize(
    ("given", "missing"), [("flops_per_step", "peak_flops_per_chip"), ("peak_flops_per_chip", "flops_per_step")]
)
def test_half_the_flops_pair_is_refused_naming_the_other(cli, tmp_path, given, missing):
    """flops_per_step without peak_flops_per_chip (or the reverse) was ignored: PG was estimated from the steps,
    exit 0, as if the job had declared nothing."""
    r = cli("goodput-report", _log(tmp_path, "half.jsonl", **{given: 1e15}), state=False)
    assert r.code == 2 and f"half.jsonl:1: field {missing}:" in r.err
    with_ideal = cli("goodput-report", _log(tmp_path, "i.jsonl", ideal_step_s=0.1, **{given: 1e15}), state=False)
    assert with_ideal.code == 0, with_ideal.err  # ideal_step_s declares the ideal: the pair is not used


@pytest.mark.parametrize("accelerator", ["tpu7x", "tpu-v5p", "tpu-v5p-slice"])
def test_the_modelled_ideal_step_uses_the_job_accelerators_figures(cli, tmp_path, accelerator):
    """A TPU7x or v5p job (by generation name or GKE label) is modelled with its generation's peak FLOP/s and
    links, as `collective` models it, not TPU v4's; an accelerator tpufleet has no figures for keeps TPU v4's."""
    from tpufleet.collectives.profile import default_profile, for_generation
    from tpufleet.state.generations import shipped

    shape = parse_shape("4x4x4")
    profile = for_generation(default_profile(), shipped(accelerator.removesuffix("-slice")))
    ideal = ideal_step_time(shape, FLOPS, GRADS, profile)
    assert ideal < ideal_step_time(shape, FLOPS, GRADS)  # a faster chip than TPU v4's
    declared = _log(tmp_path, "model.jsonl", topology="4x4x4", model_flops_per_step=FLOPS, gradient_bytes=GRADS)
    _relabel(declared, accelerator)
    measured = _log(tmp_path, "ideal.jsonl", topology="4x4x4", ideal_step_s=ideal)
    other = _log(tmp_path, "other.jsonl", topology="4x4x4", model_flops_per_step=FLOPS, gradient_bytes=GRADS)
    _relabel(other, "tpu-v9")
    v4 = _log(tmp_path, "v4.jsonl", topology="4x4x4", ideal_step_s=ideal_step_time(shape, FLOPS, GRADS))
    runs = [cli("goodput-report", path, "-o", "json", state=False) for path in (declared, measured, other, v4)]
    assert [r.code for r in runs] == [0, 0, 0, 0], [r.err for r in runs]
    pg = [r.json["jobs"][0]["pg"] for r in runs]
    assert pg[0] == pytest.approx(pg[1], rel=1e-12) and pg[2] == pytest.approx(pg[3], rel=1e-12)
    assert pg[0] < pg[2]


def _relabel(path: str, accelerator: str) -> None:
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(text.replace('"tpu-v4"', f'"{accelerator}"', 1))
