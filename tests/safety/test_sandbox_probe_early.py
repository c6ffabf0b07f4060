"""``localhand run`` starts bubblewrap's probes on a thread as it begins (``probe_early``), so
they run while the run loads: the verdict is the one ``available()`` gives when asked cold, and
bubblewrap is probed once, never again by ``available()`` while that probe is in flight."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

COLD = (
    "import json\n"
    "from localhand.safety.box.sandbox import available\n"
    "from localhand.safety.box.limits import tmp_size_supported\n"
    "print(json.dumps([available(), tmp_size_supported()]))\n"
)

EARLY = (
    "import json, sys\n"
    "spawned = []\n"
    "def hook(event, args):\n"
    "    if event == 'subprocess.Popen':\n"
    "        spawned.append(list(args[1]))\n"
    "sys.addaudithook(hook)\n"
    "from localhand.safety.box.sandbox import available, probe_early\n"
    "from localhand.safety.box.limits import tmp_size_supported\n"
    "probe_early()\n"
    "probe_early()  # a second call starts nothing\n"
    "verdict = [available(), tmp_size_supported()]\n"
    "print(json.dumps({'verdict': verdict, 'spawned': spawned}))\n"
)


def _python(code: str) -> object:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout)


def test_the_early_probe_finds_what_a_cold_one_does_and_probes_once() -> None:
    cold = _python(COLD)
    early = _python(EARLY)
    assert isinstance(early, dict)
    assert early["verdict"] == cold
    if shutil.which("bwrap") is None:
        return  # nothing to probe: the verdict says why, and it is the same
    probes = [args for args in early["spawned"] if "--unshare-net" in args]
    helps = [args for args in early["spawned"] if args[1:] == ["--help"]]
    assert (len(probes), len(helps)) == (1, 1), early["spawned"]
