"""`suspects`, `plan-spares`, `capacity --confidence` and `simulate-availability` take their binomial
tails from the special functions `scipy.stats` uses, without importing `scipy.stats` (0.5 s of CPU and 60 MB, most
of `suspects`' time): the same floats, so the same output."""

import random
import subprocess
import sys

import pytest

from tpufleet.tails import binom_sf


def test_binomial_tails_are_scipy_stats_own():
    from scipy.stats import binom

    rng = random.Random(0)
    cases = [(k, n, p) for n in (0, 1, 2, 64, 140, 144) for k in (-2, -1, 0, 1, n - 1, n, n + 1) for p in (0.0, 1.0)]
    cases += [(rng.randrange(-2, n + 2), n, rng.random()) for n in (rng.randrange(0, 3000) for _ in range(3000))]
    cases += [(k, 144, 0.9990004**16) for k in range(-1, 146)]
    for k, n, p in cases:
        assert binom_sf(k, n, p) == float(binom.sf(k, n, p)), (k, n, p)


@pytest.mark.parametrize("command", [["suspects"], ["plan-spares"], ["capacity", "--confidence", "0.95"]])
def test_the_tails_do_not_import_scipy_stats(tmp_path, command):
    """In a process of its own: the suite's other tests import scipy.stats."""
    state = tmp_path / "state"
    code = (
        "import sys\n"
        "from tpufleet.cli import main\n"
        "for argv in (['init', '--generation', 'tpu7x'], ['inject-fault', 'host:c03/1'],"
        " ['clear-fault', 'f1'], ['inject-fault', 'host:c03/1'], ['inject-fault', 'host:c05/2'],"
        " ['allocate', 'a', '--shape', '8x8x8'],"
        f" {command!r}):\n"
        "    try:\n"
        f"        main(['--state', {str(state)!r}, *argv])\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None, 1), (argv, exc.code)\n"
        "assert 'scipy.stats' not in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
