"""Where the models run and in what precision: a device ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

``auto`` is the first CUDA device when torch sees one, else the CPU. On a CUDA device with
native bfloat16 (compute capability 8 and up: Ampere and later, ReProver's test before it
runs its retriever in bfloat16) forward passes run under bfloat16 autocast, as ReProver
trains (Lightning's ``bf16-mixed``: float32 weights, bfloat16 arithmetic); on older GPUs and
on the CPU in float32. Embeddings come back as float32 either way.

Embedding batches are sized by tokens, not texts (``Placement.batch_tokens``): a batch
of 64 premises of 2048 bytes would need gigabytes for ByT5's attention on a CPU, one of 64
short names almost nothing.

torch is imported when a placement is made, not with this module: the command line checks
a device's name (:func:`check_device`) before any heavy import.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lean_env.errors import UserInputError

if TYPE_CHECKING:
    import torch

_DEVICE = re.compile(r"auto|cpu|cuda(?::(\d+))?")
# Tokens per embedding batch (padded length x texts). CPU: 8 of ByT5-small's 2048-byte inputs,
# ~0.8 GB for one layer's attention scores in float32. CUDA: 32 of them in bfloat16, ~1.6 GB.
CPU_BATCH_TOKENS = 16_384
CUDA_BATCH_TOKENS = 65_536
# ReProver's rule (retrieval/model.py, load_hf): bfloat16 from compute capability 8.
_BF16_CAPABILITY = 8


class DeviceError(UserInputError):
    """A device name that names no device, or a device this machine does not have."""


def check_device(text: str) -> str:
    """``text`` if it is ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; else DeviceError."""
    if _DEVICE.fullmatch(text) is None:
        raise DeviceError(f"a device must be auto, cpu, cuda or cuda:N, got {text!r}")
    return text


@dataclass(frozen=True, slots=True)
class Placement:
    """A device and the precision forward passes run in on it."""

    device: torch.device
    dtype: torch.dtype  # bfloat16 (under autocast) or float32
    batch_tokens: int = CPU_BATCH_TOKENS  # padded length x texts of one embedding batch

    @classmethod
    def cpu(cls) -> Placement:
        import torch

        return cls(torch.device("cpu"), torch.float32)

    @property
    def index_device(self) -> str | None:
        """Where a premise index of embeddings made here searches: on this GPU (the vectors
        are made there, and one masked product there beats any CPU index), or None for the
        CPU's faiss index."""
        return str(self.device) if self.device.type == "cuda" else None

    @contextlib.contextmanager
    def autocast(self) -> Iterator[None]:
        """Forward passes inside run in :attr:`dtype` (nothing changes for float32)."""
        import torch

        if self.dtype == torch.float32:
            yield
            return
        with torch.autocast(device_type=self.device.type, dtype=self.dtype):
            yield


def placement(spec: str = "auto") -> Placement:
    """The placement ``spec`` (see :func:`check_device`) names on this machine; DeviceError
    for CUDA where torch sees none, or a device number it does not have."""
    import torch

    match = _DEVICE.fullmatch(check_device(spec))
    assert match is not None
    if spec == "cpu" or (spec == "auto" and not torch.cuda.is_available()):
        return Placement.cpu()
    if not torch.cuda.is_available():
        raise DeviceError(f"device {spec!r}: torch sees no CUDA device here (use cpu or auto)")
    index = int(match.group(1) or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device {spec!r}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    major, _ = torch.cuda.get_device_capability(index)
    dtype = torch.bfloat16 if major >= _BF16_CAPABILITY else torch.float32
    return Placement(torch.device("cuda", index), dtype, CUDA_BATCH_TOKENS)
