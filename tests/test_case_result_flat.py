"""CaseResult is held as typed groups but written and read as the flat JSON every earlier run, the store and
`eval --json` have (kernelevolve/result.py, FLAT_FIELDS; docs/design.md, "Evaluation result").

tests/fixtures/case_result_flat.json was written by the flat CaseResult before the regrouping, with every case
field set to a value other than its default. A field added to CaseResult later adds its key to the dump: add it to
the fixture then (with a non-default value), and its row to FLAT_FIELDS."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from kernelevolve.result import FLAT_FIELDS, CaseResult, EvalResult, HostContention
from tests.conftest import FIXTURES

FLAT = (FIXTURES / "case_result_flat.json").read_text()


def _at(case: CaseResult, path: str) -> object:
    node: object = case
    for part in path.split("."):
        node = getattr(node, part)
    return node


def test_the_dump_of_a_loaded_result_is_the_stored_bytes():
    result = EvalResult.model_validate_json(FLAT)
    assert result.model_dump_json(indent=1) == FLAT  # the store's result.json files
    assert EvalResult.model_validate_json(result.model_dump_json()).model_dump_json(indent=1) == FLAT  # the store
    as_json = json.dumps(result.model_dump(mode="json"))  # eval --json
    assert as_json == json.dumps(json.loads(FLAT))


def test_every_flat_field_lands_in_its_group_and_round_trips():
    stored = json.loads(FLAT)["cases"]
    result = EvalResult.model_validate_json(FLAT)
    assert [key for key, _ in FLAT_FIELDS] == list(stored[0])  # one row per flat key, in the stored order
    for case, flat in zip(result.cases, stored):
        for key, path in FLAT_FIELDS:
            value = _at(case, path)
            value = value.model_dump() if isinstance(value, HostContention) else value
            assert value == flat[key], (key, path)
        assert case.model_dump() == flat
        assert CaseResult.model_validate(case.model_dump()) == case


def test_groups_are_typed_and_the_names_of_the_flat_json_stay_outside():
    case = EvalResult.model_validate_json(FLAT).cases[0]
    assert case.timing.candidate.median_ms == 0.125 and case.timing.of("eager").judge_ms == 0.4375
    assert case.timing.compile.correct is True and case.accuracy.rule == "measured0"
    assert case.roofline.floor_ms == 0.0625 and case.reliability.unresolved == "case 0 unresolved"
    with pytest.raises(AttributeError):
        getattr(case, "t_candidate_ms")  # noqa: B009 (the flat names live in the JSON only)
    with pytest.raises(KeyError):
        case.timing.of("copy")


def _leaves(model: type[BaseModel], prefix: str = "") -> set[str]:
    out = set()
    for name, info in model.model_fields.items():
        kind = info.annotation
        group = isinstance(kind, type) and issubclass(kind, BaseModel) and kind is not HostContention
        out |= _leaves(kind, f"{prefix}{name}.") if group else {prefix + name}
    return out


def test_every_field_of_every_group_has_its_flat_key():
    assert _leaves(CaseResult) == {path for _, path in FLAT_FIELDS}
    assert len({key for key, _ in FLAT_FIELDS}) == len(FLAT_FIELDS)


def test_a_case_stored_before_the_later_fields_loads_with_their_defaults():
    old = {"shape": {"n": 4}, "correct": True, "max_abs_err": 0.0, "t_candidate_ms": 1.0, "t_eager_ms": 2.0}
    case = CaseResult.model_validate(old)
    assert case.timing.candidate.median_ms == 1.0 and case.timing.eager.median_ms == 2.0
    assert case.reliability.contention is None and case.timed and case.accuracy.rule == ""
    dumped = case.model_dump()
    assert dumped["t_eager_ms"] == 2.0 and dumped["contention"] is None and dumped["timed"] is True


def test_groups_and_flat_keys_together_build_one_case():
    case = CaseResult(shape={}, correct=True, accuracy={"rule": "r"}, atol=0.5, t_candidate_ms=3.0)
    assert case.accuracy.rule == "r" and case.accuracy.atol == 0.5 and case.timing.candidate.median_ms == 3.0
