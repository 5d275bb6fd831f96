"""One reading of `--pod` for every command that takes one: an unknown pod was said five ways (`unknown pod 'pod9'
(fleet has pod0)`, `'pod9' is not a pod (pods: pod0)`, `--pod 'pod9': no such pod`, `no pod 'pod9' in the fleet`,
the last naming no option), and only `allocate` read `' pod0'` as pod0."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import one_line, snapshot

RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


def _commands(pod: str) -> list[tuple[str, ...]]:
    return [
        ("allocate", "a", "--shape", "4x4x4", "--pod", pod),
        ("allocate", "j", "--shape", "4x4x4", "--slices", "2", "--pod", pod),
        ("capacity", "--pod", pod),
        ("plan-spares", "--pod", pod),
        ("show", "map", "--pod", pod),
        ("import", "reservation", str(RESERVATION), "--pod", pod),
    ]


@pytest.fixture
def superpod(cli):
    assert cli("init", "--generation", "tpu7x").code == 0
    return cli


@pytest.mark.parametrize("args", _commands("pod9"), ids=lambda a: " ".join(a[:2]))
def test_an_unknown_pod_is_refused_alike(superpod, args):
    before = snapshot(superpod.state)
    assert one_line(superpod(*args)) == "tpufleet: error: bad option --pod: unknown pod 'pod9' (pods: pod0)"
    assert snapshot(superpod.state) == before


@pytest.mark.parametrize("args", _commands(" pod0 "), ids=lambda a: " ".join(a[:2]))
def test_spaces_around_a_pod_are_read_alike(superpod, args):
    r = superpod(*args)
    assert r.code == 0, r.err
