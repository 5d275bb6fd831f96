"""Code generated from the project's own definitions, kept so that a command does not generate it at start.

Each module here says what made it and from what; `tests/test_generated_validator.py` fails when one is out of
date. Lint and the length checks leave this package out: its code is written by a generator, not by hand.
"""
