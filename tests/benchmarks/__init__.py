"""Speed benchmarks of ``python -m scoring`` against a bare JSON-loading yardstick."""
