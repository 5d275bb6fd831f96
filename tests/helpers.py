"""Helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path


def snapshot(state: Path) -> dict[str, bytes]:
    """Every state file's bytes (the lock files aside): to prove a refused command changed nothing."""
    return {p.name: p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file() and not p.name.startswith(".lock")}
