"""How long a board's bootstrap takes at the scale issue 12 names, and how much memory it needs.

1,000 entries x 12 datasets x 1,500 questions (18,000 questions), 1,000 resamples: the work of
``rankings.board_significance.board_significance_compute`` once the per-question vectors are read
(paired bootstrap within each dataset, per-dataset intervals, rank groups and rank ranges).
The entries are synthetic 0/1 answers around distinct skills, so the groups are realistic.

    .venv/bin/python -m tests.benchmarks.bench_board_significance [--entries 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time

import numpy as np

from scoring.significance import paired_bootstrap, rank_groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--datasets", type=int, default=12)
    parser.add_argument("--questions", type=int, default=1500, help="per dataset")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    skills = np.sort(rng.uniform(0.3, 0.8, args.entries))[::-1]
    n = args.datasets * args.questions
    scores = (rng.random((args.entries, n)) < skills[:, None]).astype(np.float32).astype(np.float64) * 100
    strata = [str(d) for d in range(args.datasets) for _ in range(args.questions)]
    names = [str(i) for i in range(args.entries)]
    times = []
    groups = 0
    for _ in range(args.repeat):
        start = time.perf_counter()
        result = paired_bootstrap(scores, names=names, samples=args.samples, seed=2019, strata=strata)
        order = [s.name for s in result.ranked()]
        places = rank_groups(result, order)
        times.append(time.perf_counter() - start)
        groups = len({p.group for p in places})
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "entries": args.entries, "questions": n, "datasets": args.datasets, "samples": args.samples,
        "seconds_median": round(statistics.median(times), 2), "seconds_all": [round(t, 2) for t in times],
        "rank_groups": groups, "peak_rss_mib": round(peak_mib),
    }))


if __name__ == "__main__":
    main()
