"""JSON and JSON Lines plumbing for Benchmark 4 files: every fault names the file and the
line (and, in a JSON array, the entry), because a user fixing a multi-gigabyte file needs
both. Validators raise ``ValueError``; the reader turns those into
:class:`BenchmarkFormatError` with the location.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from lean_env.errors import UserInputError


class BenchmarkFormatError(UserInputError):
    """A LeanDojo Benchmark 4 directory, or one of its files, that cannot be read or written."""


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise BenchmarkFormatError(f"{path}: cannot be read ({e})") from e


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of a JSON Lines file."""
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as e:
            raise BenchmarkFormatError(f"{path}: line {number}: not valid JSON ({e.msg})") from e


def iter_json_array(path: Path) -> Iterator[tuple[int, int, Any]]:
    """``(line, index, value)`` of each element of the JSON array in ``path``.

    Decoded one element at a time so that an error can say where the bad element starts.
    """
    text = read_text(path)
    decoder = json.JSONDecoder()
    size = len(text)
    line, counted = 1, 0

    def skip(i: int) -> int:
        while i < size and text[i] in " \t\r\n":
            i += 1
        return i

    def line_at(i: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, i)
        counted = i
        return line

    i = skip(0)
    if i >= size or text[i] != "[":
        raise BenchmarkFormatError(f"{path}: line {line_at(i)}: expected a JSON array of theorems")
    i = skip(i + 1)
    index = 0
    while i < size and text[i] != "]":
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise BenchmarkFormatError(f"{path}: line {e.lineno} (entry {index}): not valid JSON ({e.msg})") from e
        yield line_at(i), index, value
        index += 1
        i = skip(end)
        if i < size and text[i] == ",":
            i = skip(i + 1)
        elif i >= size or text[i] != "]":
            raise BenchmarkFormatError(
                f"{path}: line {line_at(min(i, size))}: expected ',' or ']' after entry {index - 1}"
            )
    if i >= size or skip(i + 1) != size:
        raise BenchmarkFormatError(f"{path}: line {line_at(min(i, size))}: the JSON array is not closed properly")


def string(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key) if isinstance(data, Mapping) else None
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string, got {value!r}")
    return value


def optional_string(data: Mapping[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else string(data, key)


def list_of(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what!r} must be a list, got {type(value).__name__}")
    return value


def strings(value: Any, what: str) -> tuple[str, ...]:
    items = list_of(value, what)
    if not all(isinstance(v, str) for v in items):
        raise ValueError(f"{what!r} must be a list of strings")
    return tuple(items)


def reason(error: Exception) -> str:
    return f"missing field {error}" if isinstance(error, KeyError) else str(error)


def write_json_array(path: Path, items: Sequence[Any]) -> None:
    """A JSON array with one element per line: still one JSON value (LeanDojo writes it on
    one line), but errors found later can name a useful line."""
    with path.open("w", encoding="utf-8") as out:
        out.write("[\n")
        out.write(",\n".join(json.dumps(item, ensure_ascii=False) for item in items))
        out.write("\n]\n" if items else "]\n")
