"""The per-length deadline reaches every stage: the interpreter's runs, the signature search,
every per-symbol loop of the encoding, and writing the formula out; a large vocabulary is
answered UNKNOWN within the timeout instead of late."""

from __future__ import annotations

import dataclasses
import gc
import time

import numpy as np
import pytest
from pysmt.environment import Environment
from pysmt.typing import BVType
from verify_synth import SynthConfig, random_spec

from verify.model.spec import EncoderSpec, Mask, PositionalKind
from verify.queries import questions
from verify.queries.questions import trsat
from verify.queries.results import QueryOptions
from verify.smt.bitvec import Builder, OutOfTime
from verify.smt.solvers import Problem, Verdict


@pytest.mark.parametrize(
    "codes",
    [
        pytest.param([3], id="one"),
        pytest.param([0, 1, 2], id="a-run-from-zero"),
        pytest.param([5, 6, 7], id="a-run-to-the-top"),
        pytest.param(list(range(8)), id="everything"),
        pytest.param([1, 2, 4, 6, 7], id="runs-and-singles"),
        pytest.param([6, 0, 2, 1], id="unsorted"),
    ],
)
def test_is_one_of_holds_exactly_for_its_codes(codes: list[int]) -> None:
    env = Environment()
    m = env.formula_manager
    var = m.Symbol("w", BVType(3))
    formula = Builder(env).is_one_of(var, codes)
    for value in range(8):
        holds = env.simplifier.simplify(env.substituter.substitute(formula, {var: m.BV(value, 3)}))
        assert holds.is_true() is (value in codes), value


def test_is_one_of_stops_at_the_deadline() -> None:
    env = Environment()
    var = env.formula_manager.Symbol("w", BVType(20))
    with pytest.raises(OutOfTime):
        Builder(env, deadline=time.perf_counter() - 1).is_one_of(var, list(range(0, 200_000, 2)))


def test_writing_a_formula_out_stops_at_the_deadline() -> None:
    m = Environment().formula_manager
    var = m.Symbol("w", BVType(20))
    big = m.Or([m.Equals(var, m.BV(c, 20)) for c in range(0, 20_000, 2)])
    with pytest.raises(OutOfTime):
        Problem.of([big], [var], deadline=time.perf_counter() - 1)
    assert "(declare-fun w () (_ BitVec 20))" in Problem.of([big], [var]).smtlib


def _never_accepting(vocab: int, **config: object) -> EncoderSpec:
    """A one-layer encoder over ``vocab`` symbols whose readout never accepts (so no word is a
    witness and every stage of every length runs until its deadline)."""
    spec = random_spec(
        np.random.default_rng(0),
        SynthConfig(vocab_size=vocab, d_model=4, head_dim=2, width=6, weight_width=4, **config),  # type: ignore[arg-type]
    )
    never = dataclasses.replace(
        spec.readout, weight=np.zeros_like(spec.readout.weight), bias=np.full_like(spec.readout.bias, -1)
    )
    return dataclasses.replace(spec, readout=never)


@pytest.mark.parametrize(
    "config",
    [
        pytest.param({}, id="class-wise-encoding"),
        pytest.param(
            {"mask": Mask.CAUSAL, "positional": PositionalKind.TABLE, "positional_rows": 2}, id="per-position-encoding"
        ),
    ],
)
def test_a_500k_symbol_vocabulary_is_unknown_within_the_timeout(config: dict[str, object]) -> None:
    """Each length stops within its timeout plus a second, and the work outside the checks
    takes seconds, not the minutes a symbol-by-symbol encoding of 500,000 symbols would (0.45 s
    on an idle 2-core machine; the bound leaves room for a loaded one)."""
    spec = _never_accepting(500_000, **config)
    timeout = 1.0
    started = time.perf_counter()
    result = trsat(spec, max_len=2, options=QueryOptions(timeout=timeout))
    elapsed = time.perf_counter() - started
    assert result.verdict is Verdict.UNKNOWN and result.undecided == (1, 2)
    for check in result.checks:
        assert check.seconds < timeout + 1, check
    assert elapsed - sum(check.seconds for check in result.checks) < 3.0


def test_the_hosts_heap_is_out_of_full_collections_only_while_a_length_is_encoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full collection during a huge encoding would walk every object of the host process
    (a test suite's heap made a length overrun its timeout by a second): the objects that
    existed before are frozen while it is built and written, and thawed after."""
    frozen_while_encoding = []
    encode = questions.encode

    def spying_encode(*args: object, **kwargs: object) -> object:
        frozen_while_encoding.append(gc.get_freeze_count())
        return encode(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(questions, "encode", spying_encode)
    spec = _never_accepting(8)
    before = gc.get_freeze_count()
    result = trsat(spec, max_len=1, options=QueryOptions(presearch=0))
    assert result.verdict is Verdict.UNSAT
    assert frozen_while_encoding and all(count > before for count in frozen_while_encoding)
    assert gc.get_freeze_count() == before
