"""Ingestion orchestration: specs -> checkout -> tracer -> store; idempotence without
re-tracing, resuming after a failure mid-list, backend choice, and the real source backend."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from builders import repo_trace, theorem
from projects import git, git_project, lean_project

from curriculum.ingest import IngestStatus, ingest_specs, ingest_traces
from curriculum.store import Store
from lean_env.errors import LeanNotFoundError
from lean_env.records import IngestBackend, ParseProblem, RepoSpec, RepoTrace, TheoremStatus
from lean_env.repos import Checkout
from lean_env.trace import choice as choice_module
from lean_env.trace.choice import TracerChoice, choose_backend, make_tracer


class FakeTracer:
    """Records which checkouts it traced; fails on the locations it is told to."""

    def __init__(self, *, fail_on: frozenset[str] = frozenset()) -> None:
        self.traced: list[Checkout] = []
        self.fail_on = fail_on

    def __call__(self, checkout: Checkout) -> RepoTrace:
        self.traced.append(checkout)
        if checkout.location in self.fail_on:
            raise RuntimeError(f"tracer crashed on {checkout.location}")
        # Echo a different spec on purpose: the store must key by the checkout anyway.
        name = Path(checkout.location).name
        return repo_trace(
            f"./{name}",
            commit="whatever",
            theorems=[theorem(f"{name}.t1", steps=1), theorem(f"{name}.t2", steps=None)],
        )


def test_ingest_is_idempotent_and_does_not_trace_twice(tmp_path: Path, store: Store) -> None:
    a = lean_project(tmp_path / "a")
    b, head = git_project(tmp_path / "b")
    specs = [RepoSpec(str(a)), RepoSpec(str(b))]
    tracer = FakeTracer()
    first = ingest_specs(store, specs, cache_dir=tmp_path / "cache", tracer=tracer)
    assert [(o.location, o.status, o.theorems, o.sorries) for o in first] == [
        (str(a), IngestStatus.ADDED, 2, 1),
        (str(b), IngestStatus.ADDED, 2, 1),
    ]
    assert first[1].commit == head
    assert [t.spec for t in store.latest_traces()] == specs  # keyed by the checkout, not the echo
    second = ingest_specs(store, specs, cache_dir=tmp_path / "cache", tracer=tracer)
    assert [o.status for o in second] == [IngestStatus.UNCHANGED] * 2
    assert len(tracer.traced) == 2
    assert [(o.files, o.premises, o.theorems) for o in second] == [(o.files, o.premises, o.theorems) for o in first]


def test_a_failure_mid_list_keeps_earlier_repos_and_a_rerun_resumes(tmp_path: Path, store: Store) -> None:
    specs = [RepoSpec(str(lean_project(tmp_path / name))) for name in ("a", "b", "c")]
    with pytest.raises(RuntimeError, match="tracer crashed"):
        ingest_specs(
            store,
            specs,
            cache_dir=tmp_path / "cache",
            tracer=FakeTracer(fail_on=frozenset({specs[1].location})),
        )
    assert [t.spec.location for t in store.latest_traces()] == [specs[0].location]
    tracer = FakeTracer()
    outcomes = ingest_specs(store, specs, cache_dir=tmp_path / "cache", tracer=tracer)
    assert [o.status for o in outcomes] == [
        IngestStatus.UNCHANGED,
        IngestStatus.ADDED,
        IngestStatus.ADDED,
    ]
    assert [c.location for c in tracer.traced] == [specs[1].location, specs[2].location]


def test_a_new_commit_is_a_new_version_and_an_edit_of_a_plain_dir_too(tmp_path: Path, store: Store) -> None:
    repo, first = git_project(tmp_path / "repo")
    plain = lean_project(tmp_path / "plain")
    specs = [RepoSpec(str(repo)), RepoSpec(str(plain))]
    tracer = make_tracer(TracerChoice.SOURCE, dojo_cache=tmp_path / "lean_dojo")
    before = ingest_specs(store, specs, cache_dir=tmp_path / "cache", tracer=tracer)

    extra = "\ntheorem demo_more : 2 = 2 := rfl\n"
    for root in (repo, plain):
        with (root / "Demo" / "Basic.lean").open("a", encoding="utf-8") as f:
            f.write(extra)
    git(repo, "commit", "-qam", "more")
    after = ingest_specs(store, specs, cache_dir=tmp_path / "cache", tracer=tracer)

    assert [o.status for o in after] == [IngestStatus.ADDED] * 2
    assert after[0].commit == git(repo, "rev-parse", "HEAD") != first
    assert after[1].commit != before[1].commit and after[1].commit.startswith("content-")
    assert [o.theorems for o in after] == [o.theorems + 1 for o in before]
    versions = store.versions()
    assert len(versions) == 4
    assert sorted((v.commit, v.latest) for v in versions) == sorted(
        [(o.commit, False) for o in before] + [(o.commit, True) for o in after]
    )
    latest = {t.spec.location: t for t in store.latest_traces()}
    assert all("demo_more" in {x.full_name for x in latest[s.location].theorems} for s in specs)


def test_ingest_traces_stores_ready_made_traces_once(store: Store) -> None:
    traces = [
        repo_trace("https://x/a", commit="c1", theorems=[theorem("t", steps=2)]),
        repo_trace("https://x/b", commit="c1"),
    ]
    assert [o.status for o in ingest_traces(store, traces)] == [IngestStatus.ADDED] * 2
    assert [o.status for o in ingest_traces(store, traces)] == [IngestStatus.UNCHANGED] * 2
    assert store.latest_traces() == traces


def test_only_the_repository_s_own_parse_problems_are_a_warning(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    """The core library and packages are read for their premises: what the reader could not
    parse there is not the user's to mend, so it is said at info level, apart."""
    core = ".lake/packages/lean4/src/lean/Lean/Elab.lean"
    problems = [ParseProblem(core, 3, "def without a name"), ParseProblem("A.lean", 7, "no ':=' found")]
    with caplog.at_level(logging.INFO, logger="curriculum.ingest"):
        ingest_traces(store, [repo_trace("https://x/a", commit="c1", problems=problems)])
    said = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (logging.WARNING, "https://x/a@c1: 1 parse problem(s), first: A.lean:7: no ':=' found") in said
    assert (logging.INFO, "https://x/a@c1: 1 parse problem(s) in dependencies and the core library") in said


@pytest.mark.parametrize(
    ("choice", "lean", "dojo", "expected"),
    [
        pytest.param(TracerChoice.AUTO, True, True, IngestBackend.DOJO, id="auto-with-lean-and-dojo"),
        pytest.param(TracerChoice.AUTO, False, True, IngestBackend.SOURCE, id="auto-without-lean"),
        pytest.param(TracerChoice.AUTO, True, False, IngestBackend.SOURCE, id="auto-without-lean-dojo"),
        pytest.param(TracerChoice.SOURCE, True, True, IngestBackend.SOURCE, id="source"),
        pytest.param(TracerChoice.DOJO, True, False, IngestBackend.DOJO, id="dojo"),
    ],
)
def test_choose_backend(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
    choice: TracerChoice, lean: bool, dojo: bool, expected: IngestBackend,
) -> None:  # fmt: skip
    lean_path = Path("/opt/elan/bin/lean") if lean else None
    monkeypatch.setattr(choice_module, "find_tool", lambda name: lean_path)
    monkeypatch.setattr(choice_module, "require_tool", lambda name: lean_path)
    monkeypatch.setattr(choice_module.importlib.util, "find_spec", lambda name: object() if dojo else None)
    with caplog.at_level(logging.INFO, logger="lean_env.trace.choice"):
        assert choose_backend(choice) is expected
    if choice is TracerChoice.AUTO:
        assert f"ingest backend: {expected}" in caplog.text


def test_dojo_without_lean_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lean_env.lean.toolchain.find_tool", lambda name: None)
    with pytest.raises(LeanNotFoundError, match="elan"):
        choose_backend(TracerChoice.DOJO)


def test_auto_extracts_from_source_what_lean_dojo_cannot_trace(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choice_module, "find_tool", lambda name: Path("/opt/elan/bin/lean"))
    monkeypatch.setattr(choice_module.importlib.util, "find_spec", lambda name: object())
    dojo = FakeTracer()
    monkeypatch.setattr(choice_module, "_trace_dojo", lambda checkout, dojo_cache: dojo(checkout))
    tracer = make_tracer(TracerChoice.AUTO, dojo_cache=tmp_path / "lean_dojo")
    plain = lean_project(tmp_path / "plain")
    clean, head = git_project(tmp_path / "clean")
    outcomes = ingest_specs(
        store,
        [RepoSpec(str(plain)), RepoSpec(str(clean))],
        cache_dir=tmp_path / "cache",
        tracer=tracer,
    )
    assert [c.location for c in dojo.traced] == [str(clean)]  # only the git checkout
    assert [o.theorems for o in outcomes] == [4, 2]  # real extraction, then the fake's two
    assert outcomes[1].commit == head


def test_the_source_backend_end_to_end(tmp_path: Path, store: Store) -> None:
    root = lean_project(tmp_path / "proj")
    tracer = make_tracer(TracerChoice.SOURCE, dojo_cache=tmp_path / "lean_dojo")
    [outcome] = ingest_specs(store, [RepoSpec(str(root))], cache_dir=tmp_path / "cache", tracer=tracer)
    assert (outcome.status, outcome.backend, outcome.theorems, outcome.sorries) == (
        IngestStatus.ADDED, IngestBackend.SOURCE, 4, 1,
    )  # fmt: skip
    names = {t.theorem.full_name: t.theorem for t in store.theorems()}
    assert names["demo_hole"].status is TheoremStatus.SORRY
    assert [names[n].num_steps for n in ("demo_comm", "demo_true", "demo_id")] == [1, 1, 2]
