#!/usr/bin/env python3
"""A stand-in for ``lean FILE`` (and ``lake env lean FILE``) driven by a small script.

It reads the file, finds every ``theorem``/``lemma`` and its proof, and prints diagnostics
in Lean's exact command-line format (``FILE:LINE:COL: error: MESSAGE``, 1-based lines,
0-based columns, the file name as given), sorted by position, exiting 1 when it printed an
error, as ``lean`` does. Standard library only, so it runs as a plain subprocess.

The script (a JSON file named by ``FAKE_LEAN_SCRIPT``)::

    {
      "mode": "normal",           # or "garbage" (junk, exit 1), "crash" (SIGSEGV),
                                  # "hang" (sleep forever with a child process)
      "errors": [{"line": 1, "column": 0, "message": "..."}],   # extra errors in the file
      "unknown_tactics": ["aesop"],   # tactics (by first word) this Lean does not know
      "theorems": {
        "Ns.name": {
          "goals": "⊢ p",         # what an empty tactic block (or `skip`) leaves open
          "opening": {"hang": true},  # or an empty block's own outcome (default: the goals)
          "steps": {              # tactic prefix (one tactic per line) -> outcome
            "intro h": {"goals": "h : p\\n⊢ p"},
            "intro h\\nexact h": {"done": true},
            "exact x": {"error": "unknown identifier 'x'"},
            "spin": {"hang": true}
          },
          "terms": {"rfl": {"done": true}}    # term-mode proofs -> outcome
        }
      }
    }

Outcomes: ``goals`` prints ``unsolved goals`` at the ``by`` with those goals; ``error`` prints
the message at the last tactic; ``done`` prints nothing; ``reads_on`` is a proof whose text
wants more (``exact suffices h from e``): its parse error, at the next command after the
theorem, is all Lean says (it fills the rest with a ``sorry`` it does not report); ``hang`` sleeps
forever, ``sleep`` (seconds, with any of them) before answering; ``warning`` (with
any of them) adds that warning at the theorem's name; ``undeclared`` (with ``done``) leaves the
theorem out of the environment without a word, as the 2021 Lean does for some proofs, so
that ``#print axioms`` of it says it is unknown. A tactic whose first word is one of
``unknown_tactics`` is Lean's parse error ``unknown tactic``; any other prefix that is not
scripted is an error too (:data:`UNSCRIPTED`). A theorem named ``NAME_leanagent_batchK`` (a
copy in a batch of candidates) follows ``NAME``'s script. Tactics are compared with whitespace
folded, ``skip`` dropped and ``--`` comments ignored. A proof containing ``sorry`` outside comments gets Lean's
``declaration uses 'sorry'`` warning at the theorem's name (a ``def`` or ``abbrev`` whose
body has one, too). Theorems the script does not name are accepted silently.

``#print axioms NAME`` (a line of its own) prints what real Lean prints: an info message
without a position header (``lean FILE`` prints info messages bare), ``'NAME' depends on
axioms: [...]`` or ``'NAME' does not depend on any axioms``. A theorem depends on the
``"axioms"`` its script entry lists, plus ``sorryAx`` when its proof uses ``sorry`` or its
statement or proof names a declaration of the file whose body does (a placeholder). With
``"info_headers": true`` in the script the message gets a ``FILE:LINE:0: info:`` header. An
unknown NAME is an error at the command, and so is the command in a file that starts with
``module`` (Lean's module system refuses it there). ``#check @NAME`` (a line of its own) of a
name the file does not declare (or that Lean dropped) is the error ``unknown identifier
'NAME'`` at the name (a declared one prints its type bare, which nothing here reads, so it
prints nothing); so is the file check's probe ``example : True := (fun _ => trivial) @NAME``. Nothing
after ``#exit`` is read.

With ``FAKE_LEAN_LOG`` set, each run appends one JSON line (argv, cwd, pid) there, but
``--print-prefix``, which prints a directory without core sources (``src/lean/Init.lean``).

``lake build MODULE...`` and ``lake exe cache get`` answer as the script's ``"lake"`` entry
says, by step (``"build"``, ``"cache"``): ``{"exit": 1, "output": "error: ..."}`` prints the
output and exits so, ``{"hang": true}`` sleeps; by default a step prints Lake's success line.
A successful build writes ``.lake/build/fake-built`` (the modules asked for, one per line).

With ``"imports_need_build": true``, a file that imports a module (the toolchain's ``Init``,
``Lean``, ``Std`` and ``Lake`` aside) that no successful build listed in ``.lake/build/fake-built``
(of the directory Lean runs in) gets what the 2021 Lean says of an import it cannot find:
``unknown package 'X'`` at the header's first command, then an ``unknown identifier`` error at
every theorem (nothing of the imports is there), and no axioms.

``lean --server`` (and ``lake env lean --server``) speaks the language server protocol on
stdio, as much of it as :mod:`lean_env.lean.server` uses: ``initialize``, open, change (range
edits in UTF-16 columns), close, and ``textDocument/waitForDiagnostics``, answered by
publishing the diagnostics above for the document's text (0-based lines, UTF-16 columns,
the version) and then the answer. The log gets a line per message: the initialization
options, each open, each edit's range, each elaboration's version and each answer's. ``mode`` ``crash``, or
``"server": "crash"`` (the server alone), dies at the first elaboration; ``hang`` outcomes
hang it as they hang ``lean FILE``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

VERSION = "Lean (version 4.20.0, x86_64-unknown-linux-gnu, commit fake, Release)"
LAKE_VERSION = "Lake version 5.0.0-fake (Lean version 4.20.0)"

_DECL_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable)\s+)*"
    r"(?P<kw>theorem|lemma)\s+(?P<name>[^\s:({\[]+)"
)
_DEF_RE = re.compile(
    r"^(?P<indent>[ \t]*)(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable)\s+)*"
    r"(?P<kw>def|abbrev)\s+(?P<name>[^\s:({\[]+)"
)
_EXIT_RE = re.compile(r"^#exit\b", re.M)
_IMPORT_RE = re.compile(r"^import\s+(\S+)", re.M)
_PRINT_AXIOMS_RE = re.compile(r"^#print\s+axioms\s+(\S+)[ \t]*$", re.M)
# `#check @NAME`, and the file check's probe (lean_env.interactive.filecheck.declaration_probe).
_CHECK_RE = re.compile(r"^(?:#check\s+|example : True := \(fun _ => trivial\) )@(\S+)[ \t]*$", re.M)
_MODULE_ERROR = (
    "cannot use `#print axioms` in a `module`; consider temporarily removing the `module` header "
    "or placing the command in a separate file"
)
_NAMESPACE_RE = re.compile(r"^\s*namespace\s+(\S+)")
_END_RE = re.compile(r"^\s*end\s+(\S+)")
_SORRY_RE = re.compile(r"(?<![\w.'])(sorry|admit)(?![\w'])")
_LINE_COMMENT_RE = re.compile(r"--[^\n]*")
# A copy of a theorem in a batch of candidates (lean_env.interactive.batch) is elaborated as
# the theorem itself would be: real Lean does not care what a declaration is called.
_BATCH_COPY_RE = re.compile(r"_leanagent_batch\d+$")
# The error of a tactic prefix the script has no answer for (not Lean's parse error
# `unknown tactic`, which callers read as "this toolchain lacks the tactic").
UNSCRIPTED = "tactic failed: the fake lean has no answer scripted for these tactics"


def log_run(argv: list[str]) -> None:
    path = os.environ.get("FAKE_LEAN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"argv": argv, "cwd": os.getcwd(), "pid": os.getpid()}) + "\n")


def hang() -> None:
    """Sleep forever, with a child process, so that callers must kill the whole tree."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    time.sleep(3600)


def fold(tactic: str) -> str:
    return " ".join(tactic.split())


def prefix_key(tactics: list[str]) -> str:
    return "\n".join(fold(t) for t in tactics if fold(t) != "skip")


def line_col(text: str, offset: int) -> tuple[int, int]:
    """Lean's position of ``offset``: 1-based line, 0-based column."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def find_theorems(text: str, decl_re: re.Pattern[str] = _DECL_RE) -> list[dict]:
    """Each theorem's (or, with ``decl_re``, other declaration's) full name, name offset and
    proof (text after ``:=``, with offset)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    namespaces: list[str] = []
    found = []
    for i, line in enumerate(lines):
        if m := _NAMESPACE_RE.match(line):
            namespaces.append(m[1])
            continue
        if (m := _END_RE.match(line)) and namespaces and namespaces[-1] == m[1]:
            namespaces.pop()
            continue
        m = decl_re.match(line)
        if not m:
            continue
        indent = len(m["indent"])
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        decl_start, decl_end = starts[i], starts[j] - 1 if j < len(lines) else len(text)
        decl = text[decl_start:decl_end]
        assign = decl.find(":=")
        if assign < 0:
            continue
        proof_offset = decl_start + assign + 2
        found.append(
            {
                "name": ".".join([*namespaces, m["name"]]),
                "name_offset": decl_start + m.start("name"),
                "statement": text[decl_start : decl_start + assign],
                "proof_offset": proof_offset,
                "proof": text[proof_offset:decl_end].rstrip(),
            }
        )
    return found


def tactics_of(proof: str, proof_offset: int) -> tuple[int, list[tuple[int, str]]] | None:
    """``(offset of by, [(offset, tactic)])`` for a ``by`` block, None for a term."""
    stripped = proof.lstrip()
    by_offset = proof_offset + len(proof) - len(stripped)
    if not re.match(r"by(\s|$)", stripped):
        return None
    body_offset = by_offset + 2
    body = stripped[2:]
    tactics: list[tuple[int, str]] = []
    base: int | None = None
    pos = body_offset
    for raw in body.split("\n"):
        content = raw.strip()
        if content:
            indent = len(raw) - len(raw.lstrip())
            if base is None or indent <= base or pos == body_offset:
                base = indent if base is None else base
                tactics.append((pos + indent, content))
            else:
                off, previous = tactics[-1]
                tactics[-1] = (off, previous + "\n" + content)
        pos += len(raw) + 1
    return by_offset, tactics


def outcome_for(entry: dict, proof: str, proof_offset: int, unknown: frozenset[str]) -> tuple[dict, int, int]:
    """The scripted outcome of a proof, the offset of its `by` (or term), and of its last tactic."""
    parsed = tactics_of(proof, proof_offset)
    if parsed is None:
        term = " ".join(proof.split())
        offset = proof_offset + len(proof) - len(proof.lstrip())
        result = entry.get("terms", {}).get(term, {"error": f"type mismatch\n  {term}"})
        return result, offset, offset
    by_offset, tactics = parsed
    for offset, tactic in tactics:
        if tactic.split()[0] in unknown:
            return {"error": "unknown tactic"}, by_offset, offset
    key = prefix_key([t for _, t in tactics])
    last = tactics[-1][0] if tactics else by_offset
    if key == "":
        return entry.get("opening", {"goals": entry["goals"]}), by_offset, last
    steps = {prefix_key(k.split("\n")): v for k, v in entry.get("steps", {}).items()}
    return steps.get(key, {"error": UNSCRIPTED}), by_offset, last


def uncommented(proof: str) -> str:
    """Lean ignores line comments; blank them (same length, so offsets stay right)."""
    return _LINE_COMMENT_RE.sub(lambda m: " " * len(m.group()), proof)


def axioms_of(thm: dict, placeholders: set[str], entry: dict) -> list[str]:
    """The axioms a theorem depends on: its script's, and ``sorryAx`` for a placeholder in it."""
    words = set(re.findall(r"[\w.'?!]+", thm["statement"] + " " + thm["proof"]))
    uses_placeholder = any(name in words or name.rsplit(".", 1)[-1] in words for name in placeholders)
    sorry = uses_placeholder or bool(_SORRY_RE.search(thm["proof"]))
    return sorted(set(entry.get("axioms", [])) | ({"sorryAx"} if sorry else set()))


def print_axioms(text: str, script: dict) -> list[tuple[int, int, str, str]]:
    """What each ``#print axioms NAME`` line of ``text`` prints."""
    theorems = {t["name"]: t for t in find_theorems(text)}
    declarations = list(theorems.values()) + find_theorems(text, _DEF_RE)
    placeholders = {d["name"] for d in declarations if _SORRY_RE.search(uncommented(d["proof"]))}
    out = []
    for m in _PRINT_AXIOMS_RE.finditer(text):
        line, col = line_col(text, m.start())
        name = m[1].removeprefix("_root_.")
        if text.lstrip().startswith("module"):
            out.append((line, col, "error", _MODULE_ERROR))
        elif name not in theorems or _undeclared(theorems[name], script):
            out.append((line, col, "error", f"unknown constant '{name}'"))
        else:
            thm = {**theorems[name], "proof": uncommented(theorems[name]["proof"])}
            axioms = axioms_of(thm, placeholders - {name}, script.get("theorems", {}).get(name, {}))
            said = f"depends on axioms: [{', '.join(axioms)}]" if axioms else "does not depend on any axioms"
            out.append((line, col, "info", f"'{name}' {said}"))
    for d in find_theorems(text, _DEF_RE):
        if _SORRY_RE.search(uncommented(d["proof"])):
            out.append((*line_col(text, d["name_offset"]), "warning", "declaration uses 'sorry'"))
    return out


def unknown_checked(text: str, script: dict) -> list[tuple[int, int, str, str]]:
    """What each ``#check @NAME`` (or probe) line of ``text`` of an undeclared name says."""
    theorems = [t for t in find_theorems(text) if not _undeclared(t, script)]
    declared = {t["name"] for t in theorems} | {d["name"] for d in find_theorems(text, _DEF_RE)}
    return [
        (*line_col(text, m.start(1)), "error", f"unknown identifier '{m[1]}'")
        for m in _CHECK_RE.finditer(text)
        if m[1] not in declared
    ]


def _undeclared(thm: dict, script: dict) -> bool:
    """Whether the theorem's proof is one its script says Lean drops without a word."""
    entry = script.get("theorems", {}).get(_BATCH_COPY_RE.sub("", thm["name"]))
    if entry is None:
        return False
    unknown = frozenset(script.get("unknown_tactics", ()))
    return bool(outcome_for(entry, uncommented(thm["proof"]), thm["proof_offset"], unknown)[0].get("undeclared"))


def diagnostics(text: str, script: dict) -> list[tuple[int, int, str, str]]:
    out = [(e["line"], e["column"], "error", e["message"]) for e in script.get("errors", [])]
    if end := _EXIT_RE.search(text):  # Lean reads nothing after `#exit`
        text = text[: end.start()]
    if script.get("imports_need_build") and (missing := unbuilt_imports(text)):
        first = _IMPORT_RE.search(text)
        assert first is not None  # there is a missing import
        out.append((*line_col(text, first.start()), "error", f"unknown package '{missing[0].split('.')[0]}'"))
        out += [(*line_col(text, t["name_offset"]), "error", "unknown identifier 'True'") for t in find_theorems(text)]
        return sorted(out, key=lambda d: (d[0], d[1]))
    out += print_axioms(text, script)
    out += unknown_checked(text, script)
    theorems = script.get("theorems", {})
    for thm in find_theorems(text):
        thm["proof"] = uncommented(thm["proof"])
        if _SORRY_RE.search(thm["proof"]):
            line, col = line_col(text, thm["name_offset"])
            out.append((line, col, "warning", "declaration uses 'sorry'"))
            continue
        entry = theorems.get(_BATCH_COPY_RE.sub("", thm["name"]))
        if entry is None:
            continue
        unknown = frozenset(script.get("unknown_tactics", ()))
        result, by_offset, last = outcome_for(entry, thm["proof"], thm["proof_offset"], unknown)
        if result.get("hang"):
            hang()
        time.sleep(result.get("sleep", 0))
        if "warning" in result:
            line, col = line_col(text, thm["name_offset"])
            out.append((line, col, "warning", result["warning"]))
        if "goals" in result:
            line, col = line_col(text, by_offset)
            out.append((line, col, "error", "unsolved goals\n" + result["goals"]))
        elif "error" in result:
            line, col = line_col(text, last)
            out.append((line, col, "error", result["error"]))
        elif "reads_on" in result:
            after = thm["proof_offset"] + len(thm["proof"])
            next_command = after + len(text[after:]) - len(text[after:].lstrip())
            out.append((*line_col(text, next_command), "error", result["reads_on"]))
    return sorted(out, key=lambda d: (d[0], d[1]))


def unbuilt_imports(text: str) -> list[str]:
    """The modules ``text`` imports that no build made here (the toolchain's own aside)."""
    built_file = Path(".lake") / "build" / "fake-built"
    built = set(built_file.read_text(encoding="utf-8").split()) if built_file.is_file() else set()
    imported = [m.group(1) for m in _IMPORT_RE.finditer(text)]
    return [m for m in imported if m.split(".")[0] not in ("Init", "Lean", "Std", "Lake") and m not in built]


def log_event(event: dict) -> None:
    path = os.environ.get("FAKE_LEAN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"server": event, "pid": os.getpid()}) + "\n")


def _utf16(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _offset(text: str, position: dict) -> int:
    """The codepoint offset of an LSP position (0-based line, UTF-16 column) in ``text``."""
    lines = text.split("\n")
    offset = sum(len(line) + 1 for line in lines[: position["line"]])
    units, line = position["character"], lines[position["line"]] if position["line"] < len(lines) else ""
    column = 0
    while units > 0 and column < len(line):
        units -= 2 if ord(line[column]) > 0xFFFF else 1
        column += 1
    return offset + column


def _lsp_diagnostic(text: str, line: int, col: int, severity: str, message: str) -> dict:
    row = text.split("\n")[line - 1] if line - 1 < len(text.split("\n")) else ""
    where = {"line": line - 1, "character": _utf16(row[:col])}
    level = {"error": 1, "warning": 2, "info": 3}[severity]
    return {"range": {"start": where, "end": where}, "severity": level, "message": message, "source": "fake"}


def serve(script: dict) -> int:
    """The language server (see the module's docstring), until stdin closes."""
    documents: dict[str, list] = {}  # uri -> [version, text]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def send(message: dict) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdout.flush()

    while True:
        length = None
        while True:
            line = stdin.readline()
            if not line:
                return 0
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message = json.loads(stdin.read(length or 0))
        method, params = message.get("method"), message.get("params", {})
        if method == "initialize":
            log_event({"initialize": params.get("initializationOptions")})
            send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"textDocumentSync": 2}}})
        elif method == "textDocument/didOpen":
            document = params["textDocument"]
            documents[document["uri"]] = [document["version"], document["text"]]
            log_event({"open": document["uri"]})
        elif method == "textDocument/didChange":
            document = documents[params["textDocument"]["uri"]]
            for change in params["contentChanges"]:
                start, end = (
                    _offset(document[1], change["range"]["start"]),
                    _offset(document[1], change["range"]["end"]),
                )
                document[1] = document[1][:start] + change["text"] + document[1][end:]
                log_event({"change": change["range"]["start"]["line"]})
            document[0] = params["textDocument"]["version"]
        elif method == "textDocument/didClose":
            documents.pop(params["textDocument"]["uri"], None)
            log_event({"close": params["textDocument"]["uri"]})
        elif method == "textDocument/waitForDiagnostics":
            if script.get("mode") == "crash" or script.get("server") == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            version, text = documents[params["uri"]]
            log_event({"elaborate": version})
            found = [_lsp_diagnostic(text, *d) for d in diagnostics(text, script)]
            # Logged first: once answered, the client may stop this server before a later line.
            log_event({"answered": version})
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/publishDiagnostics",
                    "params": {"uri": params["uri"], "version": version, "diagnostics": found},
                }
            )
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}})


def main(argv: list[str]) -> int:
    if argv == ["--print-prefix"]:  # the source tracer's question; a prefix with no core sources
        print(Path(__file__).resolve().parent)
        return 0
    log_run(argv)
    if argv and argv[0] == "--lake":
        if argv[1:] == ["--version"]:
            print(LAKE_VERSION)
            return 0
        if argv[1:2] == ["build"] or argv[1:4] == ["exe", "cache", "get"]:
            return lake_step(argv[1:])
        if argv[1:3] != ["env", "lean"]:
            print(
                f"error: fake lake only runs `env lean FILE`, `build` and `exe cache get`, got {argv[1:]}",
                file=sys.stderr,
            )
            return 1
        argv = argv[3:]
    if argv == ["--version"]:
        print(VERSION)
        return 0
    script_path = os.environ.get("FAKE_LEAN_SCRIPT")
    script = json.loads(Path(script_path).read_text(encoding="utf-8")) if script_path else {}
    mode = script.get("mode", "normal")
    if argv == ["--server"]:
        return serve(script)
    if mode == "hang":
        hang()
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "garbage":
        print("PANIC at Lean.Elab.Command: not a diagnostic\n#<garbage>")
        return 1
    file = argv[-1]
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError:
        print(f"file not found: {file}", file=sys.stderr)
        return 1
    found = diagnostics(text, script)
    sys.stdout.write(printed(file, found, script))
    return 1 if any(severity == "error" for _, _, severity, _ in found) else 0


def printed(file: str, found: list[tuple[int, int, str, str]], script: dict) -> str:
    """What ``lean FILE`` prints of the diagnostics ``found`` in the file named ``file``."""
    # Real `lean FILE` prints info messages without their position.
    bare = not script.get("info_headers")
    return "".join(
        f"{message}\n" if severity == "info" and bare else f"{file}:{line}:{col}: {severity}: {message}\n"
        for line, col, severity, message in found
    )


def in_memory(script: dict):
    """This fake without a process: a :class:`~lean_env.lean.mock.MockLean` that answers each
    run as ``lean FILE`` here answers in the normal mode, for tests of what is done with
    Lean's answer rather than of running it. Outcomes that hang or sleep would do so in
    the test itself: those need the process."""
    from lean_env.lean.mock import MockLean

    return MockLean(lambda file, text: printed(file, diagnostics(text, script), script))


def lake_step(argv: list[str]) -> int:
    """``lake build ...`` or ``lake exe cache get``, as the script's ``"lake"`` entry says."""
    script_path = os.environ.get("FAKE_LEAN_SCRIPT")
    script = json.loads(Path(script_path).read_text(encoding="utf-8")) if script_path else {}
    step = script.get("lake", {}).get("build" if argv[0] == "build" else "cache", {})
    if step.get("hang"):
        hang()
    print(step.get("output", "Build completed successfully."))
    code = int(step.get("exit", 0))
    if code == 0 and argv[0] == "build":
        built = Path(".lake") / "build"
        built.mkdir(parents=True, exist_ok=True)
        (built / "fake-built").write_text("".join(f"{m}\n" for m in argv[1:]), encoding="utf-8")
    return code


def write_wrappers(bin_dir: Path) -> None:
    """Put ``lean`` and ``lake`` executables running this fake into ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    me = Path(__file__).resolve()
    for name, extra in (("lean", ""), ("lake", " --lake")):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{me}"{extra} "$@"\n')
        wrapper.chmod(0o755)


def activate(monkeypatch, bin_dir: Path, script: dict) -> Path:
    """Make this fake the ``lean``/``lake`` on PATH for one test; returns the script file.

    ``monkeypatch`` is pytest's fixture; elan's own bin directory is hidden too, so a real
    toolchain on the machine cannot answer instead of the fake.
    """
    write_wrappers(bin_dir)
    script_file = bin_dir / "script.json"
    script_file.write_text(json.dumps(script), encoding="utf-8")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_LEAN_SCRIPT", str(script_file))
    monkeypatch.setenv("ELAN_HOME", str(bin_dir / "no-elan"))
    return script_file


# One tactic-mode and one term-mode `sorry`: the file of the repository that the final-check
# and CLI tests run this fake against (see :func:`demo_repo`).
DEMO_SOURCE = """\
namespace Demo

theorem imp_self' (p : Prop) : p → p := by
  sorry

theorem two : 1 + 1 = 2 := sorry

end Demo
"""


def demo_repo(tmp_path: Path, monkeypatch, script: dict) -> Path:
    """A repository ``tmp_path/repo`` holding ``Demo.lean`` (:data:`DEMO_SOURCE`), with this
    fake answering as ``lean`` from ``script``."""
    activate(monkeypatch, tmp_path / "bin", script)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "Demo.lean").write_text(DEMO_SOURCE, encoding="utf-8")
    return root


def theorem_record(text: str, full_name: str, path: str):
    """The :class:`lean_env.records.Theorem` of ``full_name`` in ``text``, as this fake sees it.

    Tests build their records with this instead of the source extractor, so they do not
    depend on it; ``start`` is the declaration keyword, ``proof_start`` the proof's first
    token, ``end`` the end of the proof.
    """
    from lean_env.records import Position, Theorem, TheoremStatus

    def position(offset: int) -> Position:
        line, col = line_col(text, offset)
        return Position(line, col + 1)

    thm = next(t for t in find_theorems(text) if t["name"] == full_name)
    line_start = text.rfind("\n", 0, thm["name_offset"]) + 1
    keyword = line_start + len(text[line_start:]) - len(text[line_start:].lstrip())
    proof_end = thm["proof_offset"] + len(thm["proof"])
    # Like the source extractor: the proof starts at its first token, after `:=` and spaces.
    first_token = thm["proof_offset"] + len(thm["proof"]) - len(thm["proof"].lstrip())
    uses_sorry = bool(_SORRY_RE.search(thm["proof"]))
    return Theorem(
        full_name=full_name,
        path=path,
        start=position(keyword),
        end=position(proof_end),
        statement=text[keyword : thm["proof_offset"] - 2].strip(),
        proof=thm["proof"].strip(),
        status=TheoremStatus.SORRY if uses_sorry else TheoremStatus.PROVEN,
        proof_start=position(first_token),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
