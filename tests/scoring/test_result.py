from __future__ import annotations

from scoring.result import EvalResult


def test_a_result_defaults_to_its_own_empty_lists() -> None:
    first, second = EvalResult({"f1": 1.0}), EvalResult({"f1": 1.0})
    first.warnings.append("note")
    assert second.warnings == [] and second.per_example == [] and second.output is None


def test_results_compare_by_value_like_the_dataclass_they_were() -> None:
    result = EvalResult({"f1": 1.0}, [{"id": "q"}], ["note"], output="text")
    assert result == EvalResult({"f1": 1.0}, [{"id": "q"}], ["note"], "text")
    assert result != EvalResult({"f1": 1.0}, [{"id": "q"}], ["note"])
    assert result != ({"f1": 1.0}, [{"id": "q"}], ["note"], "text")
    assert repr(EvalResult({})) == "EvalResult(metrics={}, per_example=[], warnings=[], output=None)"
