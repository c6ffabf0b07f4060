"""Running the command line in a real pseudo-terminal, as a person in a terminal does.

The child gets the terminal as its standard streams and its controlling terminal (so
``/dev/tty``, where approvals are asked, is this one too), a window of the given size, and no
``COLUMNS``: what it knows of the width it learns from the terminal.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Mapping
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")


def shown_on(person: int) -> bytes:
    """What a pseudo-terminal showed, read from the person's side ``person`` until it has been
    quiet for 0.2 s."""
    out = b""
    while select.select([person], [], [], 0.2)[0]:
        chunk = os.read(person, 65536)
        if not chunk:
            break
        out += chunk
    return out


class Terminal:
    """``localhand ARGS`` in a pseudo-terminal ``columns`` wide; ``output`` is what it wrote
    (escape sequences kept), ``plain()`` the same without them."""

    def __init__(
        self,
        *args: str,
        cwd: Path,
        columns: int = 60,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        environment.pop("NO_COLOR", None)
        environment["TERM"] = "xterm-256color"
        environment.update(env or {})
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localhand", *args],
            cwd=cwd,
            env=environment,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self._data = bytearray()
        self._lock = threading.Condition()  # notified at each chunk read and at the end
        self._done = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            self._read_until_closed()
        finally:
            with self._lock:
                self._done = True
                self._lock.notify_all()

    def _read_until_closed(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.1)
                if not ready:
                    if self.process.poll() is not None:
                        return
                    continue
                chunk = os.read(self.master, 65536)
            except OSError:  # the child closed the terminal (EIO)
                return
            if not chunk:
                return
            with self._lock:
                self._data += chunk
                self._lock.notify_all()

    @property
    def output(self) -> str:
        with self._lock:
            return self._data.decode("utf-8", "replace")

    def plain(self) -> str:
        return ANSI.sub("", self.output)

    def expect(self, text: str, timeout: float = 30, after: int = 0) -> int:
        """Wait until ``text`` appears in the plain output past index ``after``; its end.
        Woken by each chunk the reader takes in, and by the terminal's end (the reader has
        then taken in everything the child wrote)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = ANSI.sub("", self._data.decode("utf-8", "replace")).find(text, after)
                if found >= 0:
                    return found + len(text)
                left = deadline - time.monotonic()
                if self._done or left <= 0:
                    break
                self._lock.wait(left)
        raise AssertionError(f"{text!r} never appeared; the terminal shows:\n{self.plain()}")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout)
        self._reader.join(5)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


def screen_lines(text: str) -> list[str]:
    """``text`` (plain) cut where the terminal starts a line anew: newlines and carriage
    returns (a line redrawn in place starts with one)."""
    return [part for line in text.split("\n") for part in line.split("\r")]
