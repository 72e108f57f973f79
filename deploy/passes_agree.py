"""Do the two test passes of deploy/test.sh agree?  ``passes_agree.py FULL SUBSET``

FULL holds the JUnit XML files (``*.xml``) of the pass that ran the whole selection (PostgreSQL),
SUBSET those of the pass that ran only the tests touching the database (SQLite).  They agree when every test of SUBSET is in
FULL with the same outcome (passed, failed, error or skipped) and SUBSET ran at least one test; a test
of SUBSET missing from FULL was dropped there.  Exit 0 when they agree, 1 (saying where) when not.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def outcomes(folder: Path) -> dict[str, str]:
    """Each test case of the JUnit XML files in ``folder`` (``classname::name``) and its outcome."""
    found: dict[str, str] = {}
    cases = [case for path in sorted(folder.glob("*.xml")) for case in ET.parse(path).getroot().iter("testcase")]
    for case in cases:
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        # A test that failed and then errored in its teardown is reported twice: the worst wins.
        outcome = next((kind for kind in ("error", "failure", "skipped") if kind in kinds), "passed")
        key = f"{case.get('classname')}::{case.get('name')}"
        if found.get(key) in ("error", "failure") and outcome not in ("error", "failure"):
            continue
        found[key] = outcome
    return found


def disagreements(full: dict[str, str], subset: dict[str, str]) -> list[str]:
    if not subset:
        return ["the database pass ran no test"]
    return [f"{key}: {outcome} on the database pass, {full.get(key, 'not run')} on the full pass"
            for key, outcome in sorted(subset.items()) if full.get(key) != outcome]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    full, subset = (outcomes(Path(arg)) for arg in argv)
    wrong = disagreements(full, subset)
    for line in wrong[:50]:
        print(f"passes_agree: {line}", file=sys.stderr)
    if len(wrong) > 50:
        print(f"passes_agree: ... and {len(wrong) - 50} more", file=sys.stderr)
    if not wrong:
        print(f"passes_agree: the {len(subset)} tests of the database pass have the same outcome on the full pass "
              f"({len(full)} tests)")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
