"""The workspace jail: what resolves, what is refused, and why the message says so."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from localhand.errors import ConfigError, ToolError
from localhand.tools import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    return root


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


def test_relative_paths_resolve_inside_the_root(ws: Workspace, root: Path) -> None:
    assert ws.resolve("src/main.py") == root / "src" / "main.py"
    assert ws.resolve("./src/../src/main.py") == root / "src" / "main.py"
    assert ws.resolve("new/file.txt") == root / "new" / "file.txt"  # need not exist


def test_empty_and_dot_mean_the_root(ws: Workspace, root: Path) -> None:
    assert ws.resolve("") == root
    assert ws.resolve(".") == root
    assert ws.relative(".") == "."


def test_surrounding_whitespace_is_ignored(ws: Workspace, root: Path) -> None:
    assert ws.resolve(" src/main.py\n") == root / "src" / "main.py"


def test_absolute_path_inside_is_accepted(ws: Workspace, root: Path) -> None:
    assert ws.resolve(str(root / "src" / "main.py")) == root / "src" / "main.py"


def test_dotdot_escape_is_refused_with_a_helpful_message(ws: Workspace, root: Path) -> None:
    with pytest.raises(ToolError) as caught:
        ws.resolve("../x")
    assert str(caught.value) == (
        f"path '../x' is outside the workspace {root}; use a path relative to it"
    )


def test_dotdot_inside_the_path_that_ends_outside_is_refused(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve("src/../../ws-other/file")


def test_absolute_path_outside_is_refused(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="'/etc/passwd' is outside the workspace"):
        ws.resolve("/etc/passwd")


def test_sibling_with_common_prefix_is_outside(ws: Workspace, root: Path) -> None:
    sibling = root.parent / "ws2"
    sibling.mkdir()
    with pytest.raises(ToolError):
        ws.resolve(str(sibling / "x"))


def test_symlink_pointing_outside_is_refused(ws: Workspace, root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("no")
    (root / "link").symlink_to(secret)
    with pytest.raises(ToolError) as caught:
        ws.resolve("link")
    assert "outside the workspace" in str(caught.value)
    assert f"symlink that resolves to {secret}" in str(caught.value)


def test_dangling_symlink_pointing_outside_is_refused(ws: Workspace, root: Path) -> None:
    (root / "dangling").symlink_to("/nonexistent/target")
    with pytest.raises(ToolError):
        ws.resolve("dangling")


def test_new_file_under_a_symlinked_dir_outside_is_refused(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolError):
        ws.resolve("out/new.txt")


def test_symlink_inside_the_workspace_is_followed(ws: Workspace, root: Path) -> None:
    (root / "alias.py").symlink_to(root / "src" / "main.py")
    assert ws.resolve("alias.py") == root / "src" / "main.py"
    assert ws.relative("alias.py") == "src/main.py"


def test_root_given_through_a_symlink_is_resolved(root: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-ws"
    link.symlink_to(root, target_is_directory=True)
    ws = Workspace(link)
    assert ws.root == root
    assert ws.resolve(str(link / "src" / "main.py")) == root / "src" / "main.py"


def test_relative_returns_posix_paths(ws: Workspace, root: Path) -> None:
    assert ws.relative(root / "src" / "main.py") == "src/main.py"
    assert ws.relative("src/") == "src"


def test_nul_byte_is_refused(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="NUL"):
        ws.resolve("src/\0main.py")


def test_workspace_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        Workspace(tmp_path / "missing")
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError):
        Workspace(os.fspath(tmp_path / "file"))


def test_a_tilde_path_is_refused_rather_than_making_a_folder_named_tilde(
    ws: Workspace, root: Path
) -> None:
    with pytest.raises(ToolError) as caught:
        ws.resolve("~/notes.txt")
    assert str(caught.value) == (
        "path '~/notes.txt' starts with '~', which is not expanded here (it would make a folder "
        "named '~' in the workspace); use a path relative to the workspace"
    )
    (root / "~backup").mkdir()  # a real folder of that name is fine
    assert ws.resolve("~backup/x") == root / "~backup" / "x"


# opening what resolve returned: from the root's descriptor, following no symlink


def test_open_reads_a_resolved_path_even_through_an_inside_symlink(
    ws: Workspace, root: Path
) -> None:
    (root / "alias").symlink_to("src", target_is_directory=True)
    fd = ws.open(ws.resolve("alias/main.py"), os.O_RDONLY)
    with open(fd, "rb") as handle:
        assert handle.read() == b"print('hi')\n"


def test_open_refuses_a_path_whose_directory_became_a_symlink(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    target = ws.resolve("src/main.py")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "main.py").write_text("secret\n")
    (root / "src").rename(root / "old-src")
    (root / "src").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(OSError, match=r"symlink|symbolic link") as caught:
        ws.open(target, os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP


def test_directory_lists_and_makes_directories(ws: Workspace, root: Path) -> None:
    with ws.directory(ws.root) as fd:
        assert sorted(os.listdir(fd)) == ["src"]
    with ws.directory(ws.resolve("new/deeper"), make=True) as fd:
        assert os.listdir(fd) == []
    assert (root / "new" / "deeper").is_dir()
    with pytest.raises(FileNotFoundError), ws.directory(ws.resolve("missing")):
        pass


def test_directory_does_not_make_directories_through_a_symlink(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    target = ws.resolve("out/new")
    (tmp_path / "elsewhere").mkdir()
    (root / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with (
        pytest.raises(OSError, match=r"symlink|symbolic link") as caught,
        ws.directory(target, make=True),
    ):
        pass
    assert caught.value.errno == errno.ELOOP
    assert os.listdir(tmp_path / "elsewhere") == []


def test_open_refuses_a_path_outside_the_root(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.open(tmp_path / "x", os.O_RDONLY)
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.open(Path(str(ws.root) + "-sibling") / "x", os.O_RDONLY)
