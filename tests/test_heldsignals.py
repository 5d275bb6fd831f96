"""Stops held back for a block (`tpufleet.heldsignals`): sent again to their handlers once it is done, and with
`second_stops` a second one going through at once."""

from __future__ import annotations

import signal

import pytest

from tpufleet.heldsignals import stops_held


@pytest.fixture(autouse=True)
def interrupts_raise():
    """Ctrl-C raising KeyboardInterrupt, as in a command, whatever the test runner set; given back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_stop_in_the_block_comes_after_it():
    reached = []
    with pytest.raises(KeyboardInterrupt), stops_held():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # (without second_stops, held too: one comes after)
        reached.append("end of the block")
    assert reached == ["end of the block"]


def test_a_second_stop_goes_through_at_once_and_nothing_comes_after():
    reached = []
    with pytest.raises(KeyboardInterrupt) as stopped, stops_held(second_stops=True):
        signal.raise_signal(signal.SIGINT)
        reached.append("after the first")
        signal.raise_signal(signal.SIGINT)
        reached.append("after the second")
    assert reached == ["after the first"] and stopped.value.__context__ is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler given back


def test_a_second_stop_with_no_handler_of_its_own_takes_the_default_action(monkeypatch):
    """SIGTERM left at its default (a command stopped by it, no Python handler): the second one gets it again."""
    actions: list[object] = []
    monkeypatch.setattr(signal, "raise_signal", lambda signum: actions.append((signum, signal.getsignal(signum))))
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with stops_held(second_stops=True):
            handler = signal.getsignal(signal.SIGTERM)
            assert callable(handler)
            handler(signal.SIGTERM, None)
            handler(signal.SIGTERM, None)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert actions == [(signal.SIGTERM, signal.SIG_DFL)]
