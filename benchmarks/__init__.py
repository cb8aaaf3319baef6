"""ember's benchmark scripts; ``python -m benchmarks`` runs them all (see run.py)."""
