"""One mixin for the many objects that own a process, a pipe or a connection."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class ClosesOnExit:
    """For classes with an idempotent ``close()``: ``with obj:`` closes ``obj`` on the way out,
    whether the block ends normally or by an exception (which then propagates)."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
