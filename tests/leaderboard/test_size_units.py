"""Sizes on every page in one formatter and one set of units (binary, written KiB/MiB/GiB)."""

from __future__ import annotations

import re

from tests.builders.cast import Cast


def test_the_system_contract_states_the_log_cap_in_the_units_of_the_other_limits(cast: Cast) -> None:
    cast.test.allowed_kinds = ["docker_image", "code_bundle"]
    cast.test.save()
    page = cast.client("alice").get("/c/demo/submit/system/").content.decode()
    contract = page[page.index('id="contract"'):page.index("</section>", page.index('id="contract"'))]
    assert re.search(r"The log keeps \d+\.\d (KiB|MiB) of stdout", contract), contract
    assert not re.search(r"\d (KB|MB|GB)\b", page)
