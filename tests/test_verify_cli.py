"""``leanagent verify``: JSON and human output, and bad input as exit code 2 with one line."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from verify_synth import SynthConfig, random_spec

import verify.model.interpreter as ref
from agent.cli import main as cli
from verify.model.spec import Accept, Attention, Mask, load_spec, save_spec
from verify.smt.portfolio import make_portfolio


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return save_spec(random_spec(np.random.default_rng(3), SynthConfig()), tmp_path / "m.json")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(["verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_query() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent.cli.main", "verify", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    for query in ("trsat", "robust", "equiv", "export-smt", "train-example"):
        assert query in done.stdout


def test_trsat_json_reports_a_replayed_witness(capsys, model: Path) -> None:
    code, out, _ = _run(capsys, "trsat", str(model), "--max-len", "3", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["verdict"] == "sat" and data["solver"] == make_portfolio("auto").name
    word = data["witness"]["word"]
    assert ref.run(load_spec(model), word).accepted
    assert [c["length"] for c in data["checks"]] == list(range(1, len(word) + 1))


def test_trsat_human_output_and_all_lengths(capsys, model: Path) -> None:
    code, out, _ = _run(capsys, "trsat", str(model), "--all-lengths", "--class", "0", "--alphabet", "a,b")
    assert code == 0
    assert out.startswith(("SAT:", "UNSAT:")) and "length  verdict" in out
    if out.startswith("UNSAT:"):
        assert "no word of any length" in out


def test_trsat_with_prefix_suffix_and_exact_length(capsys, model: Path) -> None:
    code, out, _ = _run(
        capsys, "trsat", str(model), "--max-len", "4", "--exact-len", "--prefix", "ab", "--suffix", "c", "--json"
    )
    assert code == 0
    data = json.loads(out)
    assert [c["length"] for c in data["checks"]] == [4]
    if data["witness"]:
        word = data["witness"]["word"]
        assert word[:2] == ["a", "b"] and word[-1] == "c"


def test_robust_equiv_and_export(capsys, model: Path, tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "robust", str(model), "--word", "a b c", "--distance", "1", "--json")
    assert code == 0 and json.loads(out)["verdict"] in ("sat", "unsat")
    code, out, _ = _run(capsys, "equiv", str(model), str(model), "--max-len", "2")
    assert code == 0 and out.startswith("UNSAT: equivalent on every word of length <= 2")
    smt = tmp_path / "q.smt2"
    code, out, _ = _run(capsys, "export-smt", str(model), "--length", "2", "--out", str(smt))
    assert code == 0 and smt.read_text().count("(assert") >= 1


@pytest.mark.skipif(shutil.which("z3") is None, reason="no z3 binary on PATH")
def test_exported_script_gives_the_same_verdict_as_trsat(capsys, model: Path, tmp_path: Path) -> None:
    smt = tmp_path / "q.smt2"
    for label in ("0", "1"):
        _run(capsys, "export-smt", str(model), "--length", "2", "--class", label, "--out", str(smt))
        answer = subprocess.run(["z3", str(smt)], capture_output=True, text=True, check=False).stdout.split()[0]
        _, out, _ = _run(capsys, "trsat", str(model), "--max-len", "2", "--exact-len", "--class", label, "--json")
        assert answer == json.loads(out)["verdict"]


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(
            ["trsat", "{model}", "--max-len", "2", "--solver", "yices"], "unknown solver", id="unknown-solver"
        ),
        pytest.param(["trsat", "{bad}", "--max-len", "2"], "field width", id="malformed-model"),
        pytest.param(
            ["trsat", "{model}", "--max-len", "2", "--alphabet", "xyz"], "not in the model's alphabet", id="bad-symbol"
        ),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--timeout", "-1"], "--timeout", id="bad-timeout"),
        pytest.param(["trsat", "{model}", "--max-len", "0"], "at least 1", id="zero-length"),
        pytest.param(
            ["trsat", "{averaging}", "--all-lengths"], "average_hardmax attention", id="all-lengths-outside-class"
        ),
        pytest.param(
            ["robust", "{model}", "--word", "abq", "--distance", "1"], "not in the model's alphabet", id="bad-word"
        ),
        pytest.param(["trsat", "{tmp}/absent.json", "--max-len", "2"], "cannot read model file", id="missing-model"),
        pytest.param(["trsat", "{tmp}/bad.json", "--max-len", "2"], "field width", id="malformed-json-field"),
        pytest.param(
            ["trsat", "{model}", "--max-len", "2", "--solver", "smtlib:/no/such/solver"],
            "not an executable",
            id="missing-binary",
        ),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--presearch", "-1"], "--presearch", id="bad-presearch"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--canonical", "-3"], "--canonical", id="bad-canonical"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--enumerate", "-1"], "--enumerate", id="bad-enumerate"),
        pytest.param(
            ["trsat", "{model}", "--max-len", "2", "--jobs", "2", "--workers", "2"],
            "give one of them",
            id="jobs-and-workers",
        ),
        pytest.param(
            ["robust", "{model}", "--word", "abc", "--distance", "1", "--solver", "yices"],
            "unknown solver",
            id="robust-unknown-solver",
        ),
        pytest.param(
            ["equiv", "{model}", "{tmp}/absent.json", "--max-len", "2"],
            "cannot read model file",
            id="equiv-missing-model",
        ),
        pytest.param(
            ["equiv", "{model}", "{model}", "--max-len", "0"], "--max-len: must be at least 1", id="equiv-zero-length"
        ),
        pytest.param(
            ["export-smt", "{model}", "--length", "0"], "--length: must be at least 1", id="export-zero-length"
        ),
        pytest.param(
            ["export-smt", "{model}", "--length", "2", "--out", "{tmp}/no/dir/q.smt2"],
            "cannot write",
            id="export-unwritable",
        ),
        pytest.param(["trsat", "{tmp}/latin1.json", "--max-len", "2"], "is not UTF-8 text", id="not-utf8"),
        pytest.param(["trsat", "{tmp}/deep.json", "--max-len", "2"], "nests JSON arrays", id="deep-json"),
        pytest.param(["trsat", "{tmp}/typo.json", "--max-len", "2"], "unknown key 'resdual'", id="misspelled-key"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--timeout", "nan"], "--timeout: must be", id="nan"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--timeout", "inf"], "--timeout: must be", id="inf"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--timeout", "0"], "--timeout: must be", id="zero"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--class", "x"], "--class: invalid int", id="class-x"),
        pytest.param(["trsat", "{model}", "--max-len", "2", "--class", "7"], "class 7 is not an output", id="class-7"),
        pytest.param(["eval", "{model}", "abz"], "not in the model's alphabet", id="eval-bad-word"),
        pytest.param(["eval", "{model}", ""], "empty", id="eval-empty-word"),
        pytest.param(
            ["equiv", "{model}", "{model}", "--max-len", "2", "--solver", "smtlib:"], "needs a command", id="s"
        ),
    ],
)
def test_bad_input_is_exit_2_with_one_line(capsys, model: Path, tmp_path: Path, argv: list[str], message: str) -> None:
    data = json.loads(model.read_text())
    (tmp_path / "latin1.json").write_bytes(
        json.dumps({**data, "vocab": ["\xe4", "b", "c"]}, ensure_ascii=False).encode("latin-1")
    )
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    data["layers"][0]["resdual"] = False
    (tmp_path / "typo.json").write_text(json.dumps(data))
    del data["layers"][0]["resdual"]
    data["width"] = 99
    (tmp_path / "bad.json").write_text(json.dumps(data))
    save_spec(
        random_spec(np.random.default_rng(0), SynthConfig(attention=Attention.AVERAGE_HARDMAX)),
        tmp_path / "averaging.json",
    )
    paths = {
        "model": str(model),
        "bad": str(tmp_path / "bad.json"),
        "averaging": str(tmp_path / "averaging.json"),
        "tmp": str(tmp_path),
    }
    code, out, err = _run(capsys, *[a.format(**paths) for a in argv])
    assert code == cli.EXIT_USAGE
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("leanagent: error:") and out == ""
    code, out, _ = _run(capsys, *[a.format(**paths) for a in argv], "--json")
    assert code == cli.EXIT_USAGE and json.loads(out)["exit"] == cli.EXIT_USAGE and message in json.loads(out)["error"]


def test_softmax_model_trsat_claims_only_checked_lengths(capsys, tmp_path: Path) -> None:
    path = save_spec(
        random_spec(np.random.default_rng(1), SynthConfig(attention=Attention.SOFTMAX_TABLE)), tmp_path / "s.json"
    )
    code, out, _ = _run(capsys, "trsat", str(path), "--max-len", "2", "--class", "0", "--json")
    data = json.loads(out)
    assert code == 0 and data["bound"]["bound"] is None and not data["all_lengths"]
    if data["verdict"] == "unsat":
        assert data["claim"].endswith("unknown beyond 2")


def test_a_solver_that_is_not_installed_is_exit_2(capsys, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cvc5 missing (as on a machine without the package): one line, exit 2, before any work."""
    monkeypatch.setattr("verify.smt.solvers.installed", lambda name: name == "z3")
    code, out, err = _run(capsys, "trsat", str(model), "--max-len", "2", "--solver", "cvc5")
    assert code == cli.EXIT_USAGE and out == ""
    assert err.strip().splitlines() == ["leanagent: error: solver cvc5 is not installed (pip install cvc5)"]


def test_human_tables_say_how_each_length_was_answered(capsys, model: Path) -> None:
    code, out, _ = _run(capsys, "trsat", str(model), "--max-len", "2", "--class", "0")
    assert code == 0 and "by" in out and ("enumerate" in out or "smt" in out)
    code, out, _ = _run(capsys, "trsat", str(model), "--max-len", "2", "--class", "0", "--presearch", "0", "--json")
    assert code == 0 and {c["method"] for c in json.loads(out)["checks"]} == {"smt"}


def test_a_length_is_enumerated_when_its_words_are_cheap(capsys, tmp_path: Path) -> None:
    """3^5 words, 8 in the pre-pass: every word is run (no solver), unless --enumerate 0."""
    spec = random_spec(
        np.random.default_rng(2), SynthConfig(mask=Mask.CAUSAL, accept=Accept.ARGMAX, classes=4, weight_range=2)
    )
    path = save_spec(spec, tmp_path / "causal.json")
    ids = np.array(list(itertools.product(range(3), repeat=5)))
    label = min(set(range(4)) - set(ref.run_batch(spec, ids).labels.tolist()))
    argv = ["trsat", str(path), "--max-len", "5", "--exact-len", "--class", str(label), "--presearch", "8", "--json"]
    code, out, err = _run(capsys, *argv)
    (check,) = json.loads(out)["checks"]
    assert code == 0 and json.loads(out)["verdict"] == "unsat"
    assert (check["method"], check["solver"], check["words"]) == ("enumerate", None, 8 - 2 + 3**5)
    assert "(enumerate, 249 words" in err
    code, out, _ = _run(capsys, *argv, "--enumerate", "0")
    (check,) = json.loads(out)["checks"]
    assert code == 0 and json.loads(out)["verdict"] == "unsat" and check["method"] == "smt"


def test_eval_runs_one_word_through_the_interpreter(capsys, model: Path) -> None:
    expected = ref.run(load_spec(model), "abca")
    code, out, _ = _run(capsys, "eval", str(model), "a b c a", "--json")
    assert code == 0
    assert json.loads(out) == {
        "word": ["a", "b", "c", "a"],
        "scores": list(expected.scores),
        "label": expected.label,
        "accepted": expected.accepted,
    }
    code, out, _ = _run(capsys, "eval", str(model), "abca")
    assert code == 0 and out.startswith(f"word 'a b c a': scores {list(expected.scores)}, label {expected.label}")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["trsat", "{model}", "--max-len", "3", "--class", "0"], id="trsat"),
        pytest.param(["equiv", "{model}", "{model}", "--max-len", "3"], id="equiv"),
        pytest.param(["robust", "{model}", "--word", "abc", "--distance", "1"], id="robust"),
    ],
)
def test_progress_is_one_line_per_length_on_stderr(capsys, model: Path, argv: list[str]) -> None:
    code, out, err = _run(capsys, *[a.format(model=model) for a in argv], "--json")
    lengths = [c["length"] for c in json.loads(out).get("checks", [json.loads(out).get("check")])]
    assert code == 0
    assert [line.split(":")[1].strip() for line in err.strip().splitlines()] == [f"length {n}" for n in lengths]
    assert all(line.startswith("verify: length ") for line in err.strip().splitlines())
