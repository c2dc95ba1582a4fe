"""Theorems that share a full name in different files (exercise/solution twins, folders of
standalone files) are two theorems everywhere: both are proved, both are written back into
one patch that applies, ``PATH:NAME`` names one of them, and a write-back that fails loses
that repository's patch, never the run's report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from builders import theorem
from fakes import fake_lean
from projects import git

from agent.cli.main import main
from agent.proving.theorem_refs import TheoremRef, resolve_refs
from curriculum.results import StoredTheorem
from lean_env.errors import UserInputError

TWIN = "theorem two_eq : 2 = 1 + 1 := by\n  sorry\n"
SCRIPT = {"theorems": {"two_eq": {"goals": "⊢ 2 = 1 + 1", "steps": {"decide": {"done": True}}}}}
SEARCH = ["--candidates", "8", "--max-expansions", "2", "--tactic-timeout", "20", "--check-timeout", "20"]


@pytest.fixture
def twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose files A.lean and B.lean both declare ``two_eq`` as a sorry (B's one
    line lower, so that one file's positions do not fit the other's), named in a repos file."""
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    root = tmp_path / "twins"
    (root / "Twins").mkdir(parents=True)
    (root / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    (root / "Twins" / "A.lean").write_text(TWIN, encoding="utf-8")
    (root / "Twins" / "B.lean").write_text(f"-- the same statement\n\n{TWIN}", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "twins")
    (tmp_path / "repos.txt").write_text("twins\n", encoding="utf-8")
    return tmp_path / "repos.txt"


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out)


def test_twins_are_both_proved_and_written_back_in_one_patch_that_applies(
    twins: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    code, payload = _main(capsys, "--data-dir", data, "run", str(twins), "--tracer", "source", "--no-train", *SEARCH)
    assert code == 0, payload
    attempts = payload["proving"]["attempts"]
    assert sorted((a["path"], a["theorem"], a["outcome"]) for a in attempts) == [
        ("Twins/A.lean", "two_eq", "proved"),
        ("Twins/B.lean", "two_eq", "proved"),
    ]
    assert payload["proving"]["write_back_failed"] == {}
    patch = Path(payload["proving"]["patches"][str(tmp_path / "twins")])
    repo = tmp_path / "twins"
    subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True)
    assert (repo / "Twins" / "A.lean").read_text(encoding="utf-8") == TWIN.replace("sorry", "decide")
    assert (repo / "Twins" / "B.lean").read_text(encoding="utf-8").endswith(TWIN.replace("sorry", "decide"))


def test_path_and_name_picks_one_twin_and_a_bare_name_is_ambiguous(
    twins: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    code, _ = _main(capsys, "--data-dir", data, "ingest", "--repos", str(twins), "--tracer", "source")
    assert code == 0

    code, payload = _main(
        capsys, "--data-dir", data, "prove", "--theorem", "two_eq", "--proof-backend", "file", *SEARCH
    )
    assert code == 2
    assert "names several" in payload["error"] and "Twins/A.lean" in payload["error"]

    code, payload = _main(
        capsys, "--data-dir", data, "prove", "--theorem", "Twins/B.lean:two_eq", "--proof-backend", "file", *SEARCH
    )
    assert code == 0, payload
    assert [(a["path"], a["outcome"]) for a in payload["attempts"]] == [("Twins/B.lean", "proved")]


def test_a_write_back_that_fails_loses_its_patch_not_the_report_and_a_rerun_retries(
    twins: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lean_env.proofs import writeback
    from lean_env.proofs.text import ProofTextError

    def broken(*args: object, **kwargs: object) -> str:
        raise ProofTextError("column 129 is past the end of line 22 (125 characters)")

    monkeypatch.setattr(writeback, "render_diff", broken)
    data = tmp_path / "data"
    code, payload = _main(
        capsys, "--data-dir", str(data), "run", str(twins), "--tracer", "source", "--no-train", *SEARCH
    )
    # The report is written with everything the run did; the run is left unfinished, to retry.
    assert code == 1 and "could not be written back" in payload["error"]
    location = str(tmp_path / "twins")
    report = json.loads((data / "reports" / "run-1.json").read_text(encoding="utf-8"))
    assert report["proving"]["patches"] == {}
    assert "past the end of line 22" in report["proving"]["write_back_failed"][location]
    assert sum(a["outcome"] == "proved" for a in report["proving"]["attempts"]) == 2
    markdown = (data / "reports" / "run-1.md").read_text(encoding="utf-8")
    assert f"the proofs of {location} could not be written back" in markdown

    monkeypatch.undo()
    fake_lean.activate(monkeypatch, tmp_path / "bin", SCRIPT)
    code, payload = _main(
        capsys, "--data-dir", str(data), "run", str(twins), "--tracer", "source", "--no-train", *SEARCH
    )
    assert code == 0 and payload["resumed"] is True
    assert payload["proving"]["write_back_failed"] == {} and location in payload["proving"]["patches"]


def test_an_internal_position_fault_is_exit_1_not_2(
    twins: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A position our own reading gave that does not fit the file is our failure, not bad input."""
    import agent.proving.targets
    from lean_env.proofs.text import ProofTextError

    data = str(tmp_path / "data")
    assert _main(capsys, "--data-dir", data, "ingest", "--repos", str(twins), "--tracer", "source")[0] == 0

    def broken(*args: object, **kwargs: object) -> None:
        raise ProofTextError("column 129 is past the end of line 22 (125 characters)")

    monkeypatch.setattr(agent.proving.targets, "checkout_all", broken)
    code, payload = _main(capsys, "--data-dir", data, "prove", "--proof-backend", "file", *SEARCH)
    assert (code, payload["exit"]) == (1, 1)
    assert "past the end of line 22" in payload["error"]


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("two_eq", TheoremRef("two_eq")),
        ("Twins/B.lean:two_eq", TheoremRef("two_eq", "Twins/B.lean")),
        ("./Twins/B.lean : Ns.two_eq", TheoremRef("Ns.two_eq", "Twins/B.lean")),
        ("Nat.add_comm", TheoremRef("Nat.add_comm")),
    ],
)
def test_theorem_references_parse(text: str, ref: TheoremRef) -> None:
    assert TheoremRef.parse(text) == ref


def test_a_declared_name_matches_in_its_file_only() -> None:
    from builders import theorem

    inside = theorem("Ns.two_eq", path="Twins/B.lean")
    assert TheoremRef("two_eq", "Twins/B.lean").matches(inside)
    assert TheoremRef("Ns.two_eq", "Twins/B.lean").matches(inside)
    assert not TheoremRef("two_eq", "Twins/A.lean").matches(inside)
    assert not TheoremRef("two_eq").matches(inside)  # a bare name is the full name
    assert not TheoremRef("s.two_eq", "Twins/B.lean").matches(inside)


def _stored(id_: int, full_name: str, path: str, location: str = "/r") -> StoredTheorem:
    return StoredTheorem(id_, location, "c" * 40, theorem(full_name, path=path))


@pytest.mark.parametrize(
    "ref, stored, message",
    [
        pytest.param(
            "F.lean:symm",
            [_stored(1, "A.symm", "F.lean"), _stored(2, "B.symm", "F.lean")],
            "'F.lean:symm' names several stored theorems with a proof: F.lean:A.symm, F.lean:B.symm; "
            "name one of them so",
            id="namespaces-of-one-file",
        ),
        pytest.param(
            "two_eq",
            [_stored(1, "two_eq", "A.lean"), _stored(2, "two_eq", "B.lean")],
            "'two_eq' names several stored theorems with a proof: A.lean:two_eq, B.lean:two_eq; name one of them so",
            id="twins-in-two-files",
        ),
        pytest.param(
            "F.lean:symm",
            [_stored(1, "symm", "F.lean", "/r1"), _stored(2, "symm", "F.lean", "/r2")],
            "'F.lean:symm' names several stored theorems with a proof: F.lean:symm of /r1, F.lean:symm of /r2; "
            "name one as PATH:FULL_NAME and choose its repository with --repo",
            id="one-file-in-two-repositories",
        ),
    ],
)
def test_a_reference_to_several_theorems_lists_the_references_to_choose_from(
    ref: str, stored: list[StoredTheorem], message: str
) -> None:
    what = {"what": "stored theorem with a proof", "whats": "stored theorems with a proof"}
    with pytest.raises(UserInputError) as info:
        resolve_refs([TheoremRef.parse(ref)], stored, **what)
    assert str(info.value) == message
    # The first reference listed names its theorem alone (among its repository's: --repo).
    first = message.split(": ", 1)[1].split(",")[0].removesuffix(" of /r1")
    its_repository = [t for t in stored if t.location == stored[0].location]
    assert resolve_refs([TheoremRef.parse(first)], its_repository, **what) == [stored[0]]
