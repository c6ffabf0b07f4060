"""What localhand reads back and trusts (its trust list, batch states, editors' sessions,
checkpoints) stays out of the model's reach even when the workspace is localhand's own data
directory: a command in the sandbox there neither sees nor changes those records."""

from __future__ import annotations

from pathlib import Path

import pytest

from localhand.paths import data_dir, private_data_dir
from localhand.safety.box.sandbox import available
from localhand.tools import run_shell
from trust_helpers import pin

pytestmark = pytest.mark.skipif(
    available() is not None, reason=f"no sandbox on this machine: {available()}"
)
RECORDS = ("trust", "batch-state", "acp-sessions", "checkpoints", "tasks")


def test_a_command_in_the_data_directory_cannot_forge_what_localhand_reads_back(
    tmp_path: Path,
) -> None:
    home = private_data_dir()
    settings = tmp_path / "localhand.toml"
    settings.write_text('model = "m:1"\n')
    pin(settings)
    index = (data_dir() / "trust" / "index.json").read_text()
    (home / "batch-state").mkdir()
    forge = "; ".join(
        f"mkdir -p {name} && ls -A {name} | wc -l >> seen && echo forged > {name}/forged.json"
        for name in RECORDS
    )
    run_shell(forge, home, timeout_s=20)

    assert (data_dir() / "trust" / "index.json").read_text() == index
    assert (home / "seen").read_text().split() == ["0"] * len(RECORDS), "nothing of them seen"
    assert not [name for name in RECORDS if (home / name / "forged.json").exists()]
