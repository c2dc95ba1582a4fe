"""Shared by the ``prove`` and ``run`` CLI tests: the fake lean's demo repository as a Lake
project, the script its two theorems follow, and a tiny generator taught that script's proof."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import fake_lean
from fakes.tiny_generator import teach, tiny_t5

START, AFTER_INTRO = "p : Prop\n⊢ p → p", "p : Prop\nh : p\n⊢ p"
SCRIPT = {
    "theorems": {
        "Demo.imp_self'": {
            "goals": START,
            "steps": {"intro h": {"goals": AFTER_INTRO}, "intro h\nexact h": {"done": True}},
        },
        "Demo.two": {"goals": "⊢ 1 + 1 = 2", "steps": {}},  # every tactic is an error here
    }
}


def taught_generator(out: Path) -> Path:
    """A tiny T5 taught ``intro h`` then ``exact h`` for ``Demo.imp_self'``, saved to ``out``."""
    generator = tiny_t5(0)
    teach(generator, [(START, "intro h"), (AFTER_INTRO, "exact h")])
    generator.save(out)
    return out


# The demo file and a sorry whose statement uses a `sorry` definition: the taught proof goes
# through (the goals are Demo.imp_self''s), but the theorem depends on sorryAx.
VACUOUS_SOURCE = fake_lean.DEMO_SOURCE.replace(
    "end Demo",
    "def secret : Nat := sorry\n\ntheorem on_secret (p : Prop) (_ : secret = 0) : p → p := by\n  sorry\n\nend Demo",
)
VACUOUS_SCRIPT = {"theorems": {**SCRIPT["theorems"], "Demo.on_secret": SCRIPT["theorems"]["Demo.imp_self'"]}}


def demo_lake_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, source: str = fake_lean.DEMO_SOURCE, script: dict = SCRIPT
) -> Path:
    """``tmp_path/repo``: the fake lean's demo repository (:data:`SCRIPT`) as a Lake project,
    or another ``source`` for Demo.lean with the ``script`` the fake follows for it."""
    repo = fake_lean.demo_repo(tmp_path, monkeypatch, script)
    (repo / "Demo.lean").write_text(source, encoding="utf-8")
    (repo / "lakefile.lean").write_text("import Lake\nopen Lake DSL\npackage demo\nlean_lib Demo\n", encoding="utf-8")
    (repo / "lean-toolchain").write_text("leanprover/lean4:v4.20.0\n", encoding="utf-8")
    return repo
