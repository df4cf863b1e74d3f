"""The ``harness`` command line."""
