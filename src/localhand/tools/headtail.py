"""Keeping the head and the tail of a command's output: a command that prints without end
cannot exhaust memory, and what a person needs (how it started, how it ended) stays."""

from __future__ import annotations


class HeadTail:
    """Keeps the first ``head`` and the last ``tail`` bytes of a stream, counting what it drops."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_max, self.tail_max = head, tail
        self.head, self.tail = bytearray(), bytearray()
        self.cut = 0

    def add(self, data: bytes) -> None:
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        excess = len(self.tail) - self.tail_max
        if excess > 0:
            del self.tail[:excess]
            self.cut += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut:,} bytes cut ...]\n{tail}"
