"""Found proofs carried over to a repository's next version: a theorem still `sorry` there
with the same full name and statement is stored ``proved_by_us`` with the earlier proof's
steps, num_steps and premises, in the new version's own transaction; any other is left as
the source has it. At the level where it matters: the new version's retriever examples hold
the carried steps' goals and premises, the suggester's memory holds the steps, and the
theorem is no proving target."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest
from builders import premise, repo_trace, theorem
from projects import git, git_project
from sqlalchemy import select

from agent.generators.suggester import StepMemory
from agent.proving.attempts import earlier_attempts
from agent.proving.targets import select_targets
from curriculum import bulk
from curriculum.db import PremiseRow, TacticPremiseRow, TacticRow, VersionRow
from curriculum.ingest import IngestStatus, ingest_specs, ingest_traces
from curriculum.results import AddedTrace
from curriculum.store import Store
from lean_env.records import AttemptOutcome, RepoSpec, RepoTrace, Theorem, TheoremStatus, TracedTactic
from lean_env.trace.choice import TracerChoice, make_tracer
from retrieval.corpus import PremiseCorpus

URL = "https://example.org/r.git"
LEMMA = premise("A.lemma")  # lines 1-3 of A.lean: accessible from the theorems below it
STEPS = (
    TracedTactic("intro h", "p : Prop\n⊢ p → p", "p : Prop\nh : p\n⊢ p", ("A.lemma",)),
    TracedTactic("exact A.lemma h", "p : Prop\nh : p\n⊢ p", None, ("A.lemma", "Nat.succ")),
)
KEPT = theorem("A.kept", steps=None, line=5)


def version(commit: str, *theorems: Theorem) -> RepoTrace:
    return repo_trace(URL, commit=commit, premises=[LEMMA], theorems=theorems)


def prove(store: Store, names: set[str], steps: Sequence[TracedTactic] = STEPS) -> None:
    """Record a checked proof of each sorry theorem ``names`` of the merged view, as a run does."""
    run = store.start_run({"test": "carry"})
    for stored in store.theorems(status=TheoremStatus.SORRY):
        if stored.theorem.full_name in names:
            store.record_attempt(
                run_id=run.id, theorem_id=stored.id, outcome=AttemptOutcome.PROVED, seconds=1.0, nodes=2,
                backend="file", proof="by\n  intro h\n  exact A.lemma h", steps=steps,
            )  # fmt: skip


def newest(store: Store) -> dict[str, Theorem]:
    return {t.theorem.full_name: t.theorem for t in store.theorems(location=URL)}


def test_a_found_proof_carries_over_to_the_next_version_while_its_statement_stays(store: Store) -> None:
    store.add_trace(
        version("c1", KEPT, theorem("A.changed", steps=None, line=7), theorem("A.open", steps=None, line=9))
    )
    prove(store, {"A.kept", "A.changed"})
    changed = theorem("A.changed", steps=None, line=7, statement="theorem A.changed : 1 = 1")
    v2 = version("c2", KEPT, changed, theorem("A.open", steps=None, line=9), theorem("A.new", steps=1, line=11))

    assert store.add_trace(v2) == AddedTrace(added=True, carried_proofs=("A.kept",))
    now = newest(store)
    kept = now["A.kept"]
    assert kept.status is TheoremStatus.PROVED_BY_US and kept.tactics == STEPS
    assert kept.premises == ("A.lemma", "Nat.succ") and kept.proof == KEPT.proof  # the source's text
    assert {s.full_name: s.num_steps for s in store.theorem_summaries()}["A.kept"] == 2
    assert [t.status for t in (now["A.changed"], now["A.open"])] == [TheoremStatus.SORRY] * 2
    assert now["A.changed"] == changed  # the earlier proof is of another statement: untouched
    assert [v.sorries for v in store.versions()] == [1, 2]
    # The carried steps' premises link to the new version's premise rows, as recorded ones do.
    with store._engine.connect() as conn:  # white box: the link table has no public reader
        links = conn.execute(
            select(TacticPremiseRow.name, PremiseRow.full_name, VersionRow.commit)
            .join(TacticRow, TacticRow.id == TacticPremiseRow.tactic_id)
            .join(VersionRow, VersionRow.id == TacticRow.version_id)
            .outerjoin(PremiseRow, PremiseRow.id == TacticPremiseRow.premise_id)
            .where(VersionRow.commit == "c2")
            .order_by(TacticPremiseRow.id)
        ).all()
    assert [tuple(link) for link in links] == [
        ("A.lemma", "A.lemma", "c2"),
        ("A.lemma", "A.lemma", "c2"),
        ("Nat.succ", None, "c2"),
    ]


@pytest.mark.parametrize(
    ("before", "after", "carried"),
    [
        pytest.param(KEPT, KEPT, True, id="same-statement"),
        pytest.param(
            KEPT, dataclasses.replace(KEPT, statement="theorem  A.kept :\n    True"), True, id="statement-reflowed"
        ),
        pytest.param(
            KEPT, dataclasses.replace(KEPT, statement="theorem A.kept : 1 = 1"), False, id="statement-changed"
        ),
        pytest.param(KEPT, theorem("A.kept", steps=2, line=5), False, id="proved-in-the-source"),
        pytest.param(KEPT, theorem("A.renamed", steps=None, line=5), False, id="renamed"),
        pytest.param(
            dataclasses.replace(KEPT, statement=""), dataclasses.replace(KEPT, statement=""), False, id="no-statement"
        ),
    ],
)
def test_which_theorems_carry_over(store: Store, before: Theorem, after: Theorem, carried: bool) -> None:
    store.add_trace(version("c1", before))
    prove(store, {before.full_name})
    added = store.add_trace(version("c2", after))
    assert added.carried_proofs == ((after.full_name,) if carried else ())
    [now] = newest(store).values()
    proved = dataclasses.replace(
        after, status=TheoremStatus.PROVED_BY_US, tactics=STEPS, premises=("A.lemma", "Nat.succ")
    )
    assert now == (proved if carried else after)


def test_a_carried_proof_carries_on_and_an_idempotent_re_ingest_carries_nothing(store: Store) -> None:
    store.add_trace(version("c1", KEPT))
    prove(store, {"A.kept"})
    assert store.add_trace(version("c2", KEPT)).carried_proofs == ("A.kept",)
    before = (store.stats(), store.latest_traces(), store.theorems())
    assert store.add_trace(version("c2", KEPT)) == AddedTrace(added=False)
    assert store.add_trace(version("c1", KEPT)) == AddedTrace(added=False)
    assert (store.stats(), store.latest_traces(), store.theorems()) == before
    # The previous version is the newest stored one: c2 holds the proof only as carried.
    assert store.add_trace(version("c3", KEPT)).carried_proofs == ("A.kept",)
    assert newest(store)["A.kept"].tactics == STEPS


def test_carrying_is_part_of_the_new_versions_transaction(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.add_trace(version("c1", KEPT))
    prove(store, {"A.kept"})
    before = (store.stats(), store.latest_traces(), store.theorems())

    def disk_on_fire(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    real = bulk.replace_steps
    monkeypatch.setattr(bulk, "replace_steps", disk_on_fire)
    with pytest.raises(RuntimeError, match="disk on fire"):
        store.add_trace(version("c2", KEPT))
    assert not store.has_version(URL, "c2")
    assert (store.stats(), store.latest_traces(), store.theorems()) == before
    monkeypatch.setattr(bulk, "replace_steps", real)
    assert store.add_trace(version("c2", KEPT)).carried_proofs == ("A.kept",)


def test_a_run_resumed_at_a_newer_version_reports_only_its_attempts_there(store: Store) -> None:
    """Its attempts at the version before are history: a proof found there is carried over,
    left for Lean to check at the new version (reported once checked, as that run's); a
    proof of a statement that changed carries nothing, the theorem is a target again."""
    changed = theorem("A.changed", steps=None, line=7)
    store.add_trace(version("c1", KEPT, changed))
    run = store.start_run({"test": "resume"})
    for stored in store.theorems(status=TheoremStatus.SORRY):
        store.record_attempt(
            run_id=run.id, theorem_id=stored.id, outcome=AttemptOutcome.PROVED, seconds=1.0, nodes=2,
            backend="file", proof=f"by -- {stored.theorem.full_name}", steps=STEPS,
        )  # fmt: skip
    store.add_trace(version("c2", KEPT, dataclasses.replace(changed, statement="theorem A.changed : 1 = 1")))
    assert earlier_attempts(store, run.id, store.theorems()) == []
    [carried] = store.found_proofs(URL, unconfirmed=True)
    assert (carried.stored.theorem.full_name, carried.stored.commit) == ("A.kept", "c2")
    assert (carried.proof, carried.checked_at) == ("by -- A.kept", "c1")
    [target] = select_targets(store, None, None).theorems
    store.record_attempt(
        run_id=run.id, theorem_id=target.id, outcome=AttemptOutcome.PROVED, seconds=1.0, nodes=2,
        backend="file", proof="by -- again", steps=STEPS,
    )  # fmt: skip
    reports = earlier_attempts(store, run.id, store.theorems())
    assert [(r.theorem, r.proof, r.detail) for r in reports] == [
        ("A.changed", "by -- again", "attempted before the run resumed")
    ]


def test_a_carried_proof_is_unconfirmed_until_an_attempt_at_the_new_version_proves_it(store: Store) -> None:
    """Carried on over two commits, the proof text is the one checked at the first; once an
    attempt at the second records it, the third's carried proof is the one checked there."""
    store.add_trace(version("c1", KEPT))
    prove(store, {"A.kept"})
    assert store.found_proofs(URL, unconfirmed=True) == []  # proved at c1 itself
    [found] = store.found_proofs(URL)
    assert (found.stored.commit, found.checked_at, found.carried) == ("c1", "c1", False)
    store.add_trace(version("c2", KEPT))
    store.add_trace(version("c3", KEPT))
    [carried] = store.found_proofs(URL, unconfirmed=True)
    assert (carried.stored.commit, carried.checked_at, carried.carried) == ("c3", "c1", True)
    assert store.found_proofs(URL) == [carried]
    assert carried.proof == "by\n  intro h\n  exact A.lemma h"
    assert carried.stored.theorem.status is TheoremStatus.PROVED_BY_US and carried.stored.theorem.tactics == STEPS

    run = store.start_run({"test": "confirm"})
    store.record_attempt(
        run_id=run.id, theorem_id=carried.stored.id, outcome=AttemptOutcome.PROVED, seconds=1.0, nodes=0,
        backend="carried", proof="by -- checked at c3",
    )  # fmt: skip
    assert store.found_proofs(URL, unconfirmed=True) == []
    [confirmed] = store.found_proofs(URL)  # every found proof: the one checked at c3 now
    assert (confirmed.checked_at, confirmed.proof, confirmed.carried) == ("c3", "by -- checked at c3", False)
    assert newest(store)["A.kept"].tactics == STEPS  # the carried steps stay
    store.add_trace(version("c4", KEPT))
    [carried] = store.found_proofs(URL, unconfirmed=True)
    assert (carried.stored.commit, carried.checked_at, carried.proof) == ("c4", "c3", "by -- checked at c3")
    assert store.found_proofs("https://example.org/other.git", unconfirmed=True) == []


def test_a_withdrawn_proof_makes_its_theorem_a_sorry_target_again(store: Store) -> None:
    store.add_trace(version("c1", KEPT))
    prove(store, {"A.kept"})
    store.add_trace(version("c2", KEPT))
    [carried] = store.found_proofs(URL, unconfirmed=True)
    store.withdraw_found_proof(carried.stored.id)
    with pytest.raises(ValueError, match="is sorry, not proved_by_us"):
        store.withdraw_found_proof(carried.stored.id)
    assert newest(store)["A.kept"] == KEPT  # as the source gave it: sorry, no steps, no premises
    assert {s.full_name: s.num_steps for s in store.theorem_summaries()}["A.kept"] == 0
    assert [t.id for t in select_targets(store, None, None).theorems] == [carried.stored.id]
    assert store.found_proofs(URL, unconfirmed=True) == []
    # The proof found at c1 stays there, and does not carry to the next version.
    assert store.add_trace(version("c3", KEPT)).carried_proofs == ()


def test_a_proof_recorded_after_the_next_version_was_stored_is_not_carried(store: Store) -> None:
    """(A `prove` running while `ingest` stores the next commit.) The next version keeps the
    theorem a target; proved there too in the same run, it is reported once, as of there."""
    store.add_trace(version("c1", KEPT))
    [at_c1] = store.theorems(status=TheoremStatus.SORRY)
    assert store.add_trace(version("c2", KEPT)).carried_proofs == ()
    run = store.start_run({"test": "late"})
    attempt = {"run_id": run.id, "outcome": AttemptOutcome.PROVED, "seconds": 1.0, "nodes": 2, "backend": "file"}
    store.record_attempt(theorem_id=at_c1.id, proof="by -- at c1", steps=STEPS, **attempt)  # type: ignore[arg-type]
    [at_c2] = select_targets(store, None, None).theorems
    store.record_attempt(theorem_id=at_c2.id, proof="by -- at c2", steps=STEPS, **attempt)  # type: ignore[arg-type]
    assert [(r.theorem, r.proof) for r in earlier_attempts(store, run.id, store.theorems())] == [
        ("A.kept", "by -- at c2")
    ]


def test_ingest_reports_the_carried_proofs(store: Store) -> None:
    [first] = ingest_traces(store, [version("c1", KEPT)])
    assert (first.status, first.sorries, first.carried_proofs) == (IngestStatus.ADDED, 1, 0)
    prove(store, {"A.kept"})
    [second] = ingest_traces(store, [version("c2", KEPT)])
    assert (second.status, second.sorries, second.carried_proofs) == (IngestStatus.ADDED, 0, 1)
    [again] = ingest_traces(store, [version("c2", KEPT)])
    assert (again.status, again.sorries, again.carried_proofs) == (IngestStatus.UNCHANGED, 0, 0)


SOURCE = """\
theorem demo_refl (n : Nat) : n ≤ n := Nat.le_refl n

theorem demo_le (m : Nat) : m ≤ m := by
  sorry

theorem demo_hole : 1 + 1 = 2 := by
  sorry
"""
# What a search finds for demo_le, with the goal Lean showed and the premise it names.
FOUND = (TracedTactic("exact demo_refl m", "m : Nat\n⊢ m ≤ m", None, ("demo_refl",)),)


def test_the_next_commit_trains_the_retriever_on_the_found_proof_and_does_not_prove_it_again(
    tmp_path: Path, store: Store
) -> None:
    """A git repository traced by source extraction: the proof found at its first commit is
    carried to the second (a theorem added above it, another sorry's statement changed), whose
    retriever examples, suggester memory and proving targets are what the next run uses."""
    root, _ = git_project(tmp_path / "repo", source=SOURCE)
    tracer = make_tracer(TracerChoice.SOURCE, dojo_cache=tmp_path / "lean_dojo")
    ingest_specs(store, [RepoSpec(str(root))], cache_dir=tmp_path / "cache", tracer=tracer)
    prove(store, {"demo_le", "demo_hole"}, steps=FOUND)
    edited = "theorem demo_more : 2 = 2 := rfl\n\n" + SOURCE.replace("1 + 1 = 2", "2 + 2 = 4")
    (root / "Demo" / "Basic.lean").write_text(edited, encoding="utf-8")
    git(root, "commit", "-qam", "more, and a statement changed")

    [outcome] = ingest_specs(store, [RepoSpec(str(root))], cache_dir=tmp_path / "cache", tracer=tracer)
    assert (outcome.status, outcome.sorries, outcome.carried_proofs) == (IngestStatus.ADDED, 1, 1)
    [again] = ingest_specs(store, [RepoSpec(str(root))], cache_dir=tmp_path / "cache", tracer=tracer)
    assert (again.status, again.carried_proofs) == (IngestStatus.UNCHANGED, 0)

    traces = store.latest_traces()
    [trace] = traces
    assert trace.commit == outcome.commit
    corpus = PremiseCorpus(traces)
    examples = [e for e in corpus.examples(trace) if e.theorem == "demo_le"]
    assert [(e.context, [corpus.premises[i].full_name for i in e.positives]) for e in examples] == [
        ("m : Nat\n⊢ m ≤ m", ["demo_refl"])
    ]
    assert [s.tactic for s in StepMemory.from_traces(traces).steps if s.traced] == ["exact demo_refl m"]
    targets = select_targets(store, None, None)
    assert [t.theorem.full_name for t in targets.theorems] == ["demo_hole"]
