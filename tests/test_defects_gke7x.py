"""Defects an operator of TPU7x superpods and TPU v5p pods on GKE met walking the runbook of "Using it with your
cluster": each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

RESERVATION = Path(__file__).parent.parent / "fixtures" / "gke" / "tpu7x-reservation-subblocks.json"


@pytest.fixture
def reserved(cli):
    """A TPU7x superpod with the fixture reservation imported (c17, c58, c121 DEGRADED)."""
    assert cli("init", "--generation", "tpu7x").code == 0
    r = cli("import", "reservation", RESERVATION, "--apply")
    assert r.code == 0, r.err
    return cli


def test_show_inventory_table_says_which_cubes_are_degraded(reserved):
    r = reserved("show", "inventory")
    assert r.code == 0, r.err
    header, *rows = r.out.splitlines()
    assert header.split()[-1] == "degraded"
    by_cube = {line.split()[0]: line for line in rows if line.startswith("c")}
    assert by_cube["c58"].endswith("2 host(s) degraded")
    assert by_cube["c00"].rstrip().endswith("-")


def test_status_table_lists_the_reservations_degraded_sub_blocks(reserved):
    r = reserved("status")
    assert r.code == 0, r.err
    line = next((x for x in r.out.splitlines() if x.startswith("degraded cubes (reservation")), "")
    assert "c17 (1 of 16 hosts degraded)" in line and "c58 (2 of 16 hosts degraded)" in line
