"""Speed benchmarks; ``bench_scoring`` times ``python -m scoring`` against a bare JSON-loading yardstick."""
