"""Test oracles: independent implementations and input builders the tests (and the benchmarks) check against.

They live with the tests, not in the shipped package. Import them as `oracles.<module>` (pytest puts `tests/` on
the path; benchmarks/run_all.py does the same).
"""
