"""Helpers that tests and benchmarks share and users never need: fuzzers, child-process and
spawned-daemon helpers, benchmark tables, made-up credentials in real vendor formats. Not part of
the wheel (``harness.sample_store`` is the sample generator for users); tests find it through
pytest's ``pythonpath``, benchmarks through ``bench/dev_path.py``."""
