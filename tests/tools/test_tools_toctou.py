"""A symlink swapped in between a file tool's check and its open cannot lead it outside.

A real race is hard to make deterministic, so each tool's last check is wrapped to make the
swap right after it (the worst moment), and one test hammers the swap from a thread while
writes loop. A canary directory outside the workspace must keep exactly what it had, and
nothing it holds may appear in a tool's output. Every case runs both ways of opening:
``openat2`` (where the kernel has it) and the component-by-component walk.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from localhand.errors import ToolError
from localhand.tools import FileTools, Workspace, safe_open, search
from localhand.tools.fsio import READ_FLAGS

SECRET = "CANARY-SECRET\n"


def use_openat2(enabled: bool) -> None:
    """openat2 on (where it works: tried again at the next open) or off, to run the walk."""
    safe_open._openat2 = None if enabled else False


def _openat2_works() -> bool:
    use_openat2(True)
    try:
        with safe_open.opened_root("/") as root:
            os.close(safe_open.open_beneath(root, ".", os.O_RDONLY))
        return safe_open._openat2 is not False
    finally:
        use_openat2(True)


@pytest.fixture(
    params=[
        pytest.param(
            True,
            id="openat2",
            marks=pytest.mark.skipif(not _openat2_works(), reason="no openat2 on this kernel"),
        ),
        pytest.param(False, id="walk"),
    ]
)
def opener(request: pytest.FixtureRequest) -> Iterator[bool]:
    use_openat2(request.param)
    yield request.param
    use_openat2(True)


@pytest.fixture
def world(tmp_path: Path, opener: bool) -> Iterator[Path]:
    """``ws/sub/f.txt`` inside; ``outside/`` with a canary file of the same name next to it."""
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET)
    yield root
    assert sorted(os.listdir(outside)) == ["f.txt"], "something was written outside"
    assert (outside / "f.txt").read_text() == SECRET


def swap(root: Path) -> bool:
    """``sub`` becomes a symlink to ``../outside``; the real directory is parked aside."""
    os.rename(root / "sub", root / "sub.parked")
    os.symlink(root.parent / "outside", root / "sub")
    return True


def after_listing(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[list[os.DirEntry[str]]], None]
) -> None:
    """Each directory search lists is changed by ``change`` (given what was listed) between the
    listing and search's use of it."""
    original = search.os.scandir

    def listed_then_changed(fd: int) -> Iterator[os.DirEntry[str]]:
        entries = list(original(fd))
        change(entries)
        return iter(entries)

    monkeypatch.setattr(search.os, "scandir", listed_then_changed)


def swap_after(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, root: Path, *, before: bool = False
) -> None:
    """Make ``owner.name`` swap ``sub`` for a symlink the first time it runs: right after it
    (a check), or right ``before`` it (an open)."""
    original = getattr(owner, name)
    done: list[bool] = []

    def swapping(*args: Any, **kwargs: Any) -> Any:
        if before and not done:
            done.append(swap(root))
        result = original(*args, **kwargs)
        if not done:
            done.append(swap(root))
        return result

    monkeypatch.setattr(owner, name, swapping)


def refused(attempt: Callable[[], str]) -> str:
    with pytest.raises(ToolError) as caught:
        attempt()
    return str(caught.value)


SWAPPED = "part of its path became a symlink after it was checked"
LOOP = r"symlink|symbolic link"


def test_read_after_a_swap_is_refused(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_existing", world)
    message = refused(lambda: tools.read_file("sub/f.txt"))
    assert message.startswith(f"could not read 'sub/f.txt': {SWAPPED}")
    assert "CANARY" not in message


def test_write_after_a_swap_is_refused(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_writable", world)
    assert refused(lambda: tools.write_file("sub/f.txt", "pwned")).startswith(
        f"could not write 'sub/f.txt': {SWAPPED}"
    )
    assert tools.take_written() == set()


def test_a_new_file_after_a_swap_is_refused(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_writable", world)
    refused(lambda: tools.write_file("sub/new/deeper.txt", "pwned"))


def test_edit_after_a_swap_is_refused(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_writable", world)
    message = refused(lambda: tools.edit_file("sub/f.txt", "CANARY", "pwned"))
    assert message.startswith(f"could not read 'sub/f.txt': {SWAPPED}")


def test_a_swap_between_edits_read_and_write_is_refused(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The outside file has the same text as the inside one: only the open can tell them apart.
    (world.parent / "outside" / "f.txt").write_text("inside\n")
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_check_size", world)  # first run: the file is open to read
    with pytest.raises(ToolError, match=SWAPPED):
        tools.edit_file("sub/f.txt", "inside", "pwned")
    assert (world.parent / "outside" / "f.txt").read_text() == "inside\n"
    (world.parent / "outside" / "f.txt").write_text(SECRET)


def test_list_after_a_swap_is_refused(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, tools, "_existing", world)
    message = refused(lambda: tools.list_directory("sub"))
    assert message.startswith(f"could not list 'sub': {SWAPPED}")


def test_search_after_a_swap_does_not_enter_it(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = FileTools(Workspace(world))
    swap_after(monkeypatch, search, "open_beneath", world, before=True)  # opening "sub"
    assert tools.search_files("CANARY|inside", "sub") == "No matches for 'CANARY|inside' in 'sub'."


def test_search_skips_a_directory_swapped_after_it_was_listed(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = FileTools(Workspace(world))

    def swap_sub(_: list[os.DirEntry[str]]) -> None:  # the root was listed, sub still a directory
        if (world / "sub").is_dir() and not (world / "sub").is_symlink():
            swap(world)

    after_listing(monkeypatch, swap_sub)
    assert tools.search_files("CANARY|inside") == "No matches for 'CANARY|inside' in '.'."


def test_search_skips_a_file_swapped_after_it_was_listed(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = FileTools(Workspace(world))

    def swap_f(entries: list[os.DirEntry[str]]) -> None:
        if any(entry.name == "f.txt" for entry in entries):
            (world / "sub" / "f.txt").unlink()
            (world / "sub" / "f.txt").symlink_to(world.parent / "outside" / "f.txt")

    after_listing(monkeypatch, swap_f)
    assert tools.search_files("CANARY|inside") == "No matches for 'CANARY|inside' in '.'."


def test_the_primitive_refuses_a_symlinked_parent(world: Path) -> None:
    space = Workspace(world)
    target = space.resolve("sub/f.txt")
    swap(world)
    with pytest.raises(OSError, match=LOOP) as caught:
        space.open(target, READ_FLAGS)
    assert caught.value.errno == errno.ELOOP
    with pytest.raises(OSError, match=LOOP) as caught, space.directory(target.parent):
        pass
    assert caught.value.errno == errno.ELOOP


def test_the_primitive_refuses_a_symlink_as_the_last_component(world: Path) -> None:
    space = Workspace(world)
    target = space.resolve("sub/f.txt")
    (world / "sub" / "f.txt").unlink()
    (world / "sub" / "f.txt").symlink_to(world.parent / "outside" / "f.txt")
    with pytest.raises(OSError, match=LOOP) as caught:
        space.open(target, READ_FLAGS)
    assert caught.value.errno == errno.ELOOP


@pytest.mark.parametrize("rel", ["../outside/f.txt", "sub/../../outside/f.txt", "/etc/passwd"])
def test_the_primitive_refuses_dotdot_and_absolute_paths(world: Path, rel: str) -> None:
    with safe_open.opened_root(world) as root, pytest.raises(OSError, match="out of") as caught:
        safe_open.open_beneath(root, rel, READ_FLAGS)
    assert safe_open.swapped(caught.value)


def test_symlinks_that_stay_inside_keep_working(world: Path) -> None:
    (world / "alias").symlink_to("sub", target_is_directory=True)
    (world / "alias.txt").symlink_to("sub/f.txt")
    tools = FileTools(Workspace(world))
    assert tools.read_file("alias/f.txt") == "    1| inside"
    assert tools.read_file("alias.txt") == "    1| inside"
    assert tools.write_file("alias/g.txt", "new\n") == "Created 'sub/g.txt': 4 bytes, 1 line."
    assert tools.edit_file("alias.txt", "inside", "edited").startswith("Edited 'sub/f.txt'")
    assert tools.list_directory("alias") == "f.txt\ng.txt"
    assert tools.search_files("edited") == "alias.txt:1: edited\nsub/f.txt:1: edited"
    assert (world / "alias").is_symlink() and (world / "alias.txt").is_symlink()
    assert (world / "sub" / "f.txt").read_text() == "edited\n"


def _exchange() -> Callable[[Path, Path], None] | None:
    """``renameat2(RENAME_EXCHANGE)``: swaps two names atomically, so that ``sub`` is always
    there, a directory or a symlink, as an attacker would want it. None where unavailable."""
    try:
        import ctypes

        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None

    def exchange(a: Path, b: Path) -> None:
        if renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:  # AT_FDCWD, EXCHANGE
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))

    return exchange


def test_a_thread_swapping_the_directory_never_gets_a_write_outside(world: Path) -> None:
    """The race as an attacker would run it: a command in the background flips ``sub``
    between a directory and a symlink to outside while the model writes into it."""
    exchange = _exchange()
    if exchange is None:
        pytest.skip("no renameat2 here")
    (world / "sub.link").symlink_to(world.parent / "outside")
    tools = FileTools(Workspace(world))
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not stop.is_set():
            exchange(world / "sub", world / "sub.link")
            flips += 1

    flipper = threading.Thread(target=flip)
    flipper.start()
    results = {"written": 0, "read": 0, "refused": 0}
    try:
        ends = time.monotonic() + 1.0
        while time.monotonic() < ends:
            for attempt, key in (
                (lambda: tools.write_file("sub/f.txt", "pwned\n"), "written"),
                (lambda: tools.read_file("sub/f.txt"), "read"),
            ):
                try:
                    output = attempt()
                except ToolError:
                    results["refused"] += 1
                else:
                    results[key] += 1
                    assert "CANARY" not in output
    finally:
        stop.set()
        flipper.join()
    assert flips > 100, "the swap did not run often enough to test anything"
    assert results["refused"] > 0 and results["written"] + results["read"] > 0, results


def test_a_kernel_without_openat2_falls_back_to_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine = os.uname().machine
    if safe_open._SYS_OPENAT2.get(machine) is None:
        pytest.skip("openat2 is not tried on this machine anyway")
    monkeypatch.setitem(safe_open._SYS_OPENAT2, machine, 99_999)  # answers ENOSYS, as on 5.4
    use_openat2(True)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    (tmp_path / "link").symlink_to("d", target_is_directory=True)
    try:
        with safe_open.opened_root(tmp_path) as root:
            os.close(safe_open.open_beneath(root, "d/f", READ_FLAGS))
            assert safe_open._openat2 is False
            with pytest.raises(OSError, match=LOOP):
                safe_open.open_beneath(root, "link/f", READ_FLAGS)
    finally:
        use_openat2(True)
