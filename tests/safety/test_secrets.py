"""Secrets out of reach: what the scrubber redacts, where it runs (tool results, the store,
``show``), and localhand's own environment, read from outside through /proc as a command would."""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_helpers import localhand as _localhand
from localhand import Agent
from localhand.events import EventBus
from localhand.models.scripted import ScriptedModel, call
from localhand.safety.secrets.environment import is_secret
from localhand.safety.secrets.scrub import remember_environment, scrub_text
from localhand.store import Store
from localhand.testing import FakeOllama
from localhand.tools import default_tools
from localhand.types import ToolCall

FAKE_KEY = "sk-test-abc123def456"
DB_PASSWORD = "hunter2pw"
DB_URL = f"postgresql+psycopg2://u:{DB_PASSWORD}@db/x"
SLACK = "https://hooks.slack.com/services/T0001ABCD/B0001ABCD/abcdefghijklmnopqrstuvwx"
ENV_FILE = f"DATABASE_URL={DB_URL}\nOPENAI_API_KEY={FAKE_KEY}\nSLACK_HOOK={SLACK}\n"
GHP = "ghp_abcdefghijklmnop1234567890ABCDEFGHIJ"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

REDACTED = [
    (DB_URL, "postgresql+psycopg2://u:[REDACTED]@db/x"),
    (
        "mongodb+srv://admin:S3cr3t@cluster0.x.net/db?w=1",
        "mongodb+srv://admin:[REDACTED]@cluster0.x.net/db?w=1",
    ),
    ("redis://:p4ss@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
    ("amqps://guest:guestpw1@mq/vhost", "amqps://guest:[REDACTED]@mq/vhost"),
    ("a p@ss: mysql://me:p@ss@db/app", "a p@ss: mysql://me:[REDACTED]@db/app"),
    (
        f"git clone https://user:{GHP}@github.com/o/r",
        "git clone https://user:[REDACTED]@github.com/o/r",
    ),
    (f"https://{GHP}@github.com/o/r", "https://[REDACTED]@github.com/o/r"),
    (
        "GET /v1?access_token=abcd1234&page=2 https://x.io/a?b=1&api_key=k9k9",
        "GET /v1?access_token=[REDACTED]&page=2 https://x.io/a?b=1&api_key=[REDACTED]",
    ),
    (
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=ab12cd",
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=[REDACTED]",
    ),
    (SLACK, "https://hooks.slack.com/services/[REDACTED]"),
    (
        "https://discord.com/api/webhooks/1234567890/abc-DEF_ghi",
        "https://discord.com/api/webhooks/[REDACTED]",
    ),
    (
        "https://acme.webhook.office.com/webhookb2/a1@b2/IncomingWebhook/c3/d4",
        "https://acme.webhook.office.com/[REDACTED]",
    ),
    (
        "POST https://ci.example/webhook/a1b2c3d4e5f6a7b8c9d0 ok",
        "POST https://ci.example/webhook/[REDACTED] ok",
    ),
    (f"token: {GHP}", "token: ghp_[REDACTED]"),
    (
        "gho_16C7e42F292c6912E7710c838347Ae178B4a ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "gho_[REDACTED] ghs_[REDACTED]",
    ),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_[REDACTED]"),
    ("glpat-abcdefghij1234567890 xoxb-1234567890-abcdefghijkl", "glpat-[REDACTED] xoxb-[REDACTED]"),
    (
        "sk-proj-AbC123dEf456GhI789jKl012 sk-ant-api03-abcdefghij0123456789",
        "sk-proj-[REDACTED] sk-ant-api03-[REDACTED]",
    ),
    (
        "key id AKIAIOSFODNN7EXAMPLE, session ASIAY34FZKBOKMUTVV7A",
        "key id AKIA[REDACTED], session ASIA[REDACTED]",
    ),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [REDACTED]",
    ),
    (
        "AIzaSyA-1234567890abcdefghijklmnopqrstu ya29.a0AfH6SMBx1234567890abcdef",
        "AIza[REDACTED] ya29.[REDACTED]",
    ),
    (
        "hf_abcdefghijklmnopqrstuvwxyz123456 npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "hf_[REDACTED] npm_[REDACTED]",
    ),
    (
        "pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4 sk_live_4eC39HqLyjWDarjtT1zdp7dc "
        "rk_live_abcdef1234567890ab",
        "pypi-[REDACTED] sk_live_[REDACTED] rk_live_[REDACTED]",
    ),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.[REDACTED]",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nnext",
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\nnext",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1r (cut)",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("Authorization: Bearer abc.def.ghi123", "Authorization: Bearer [REDACTED]"),
    (
        "curl -H 'authorization: token 0123abcd' -H 'X-Api-Key: zz9zz9zz'",
        "curl -H 'authorization: token [REDACTED]' -H 'X-Api-Key: [REDACTED]'",
    ),
    ("bearer abcdefgh12345", "bearer [REDACTED]"),
    (
        "password=hunter2\nDB_PASSWORD=hunter\nexport GITHUB_TOKEN=abc",
        "password=[REDACTED]\nDB_PASSWORD=[REDACTED]\nexport GITHUB_TOKEN=[REDACTED]",
    ),
    (
        "db:\n  password: hunter\n  secret: s3cr3t",
        "db:\n  password: [REDACTED]\n  secret: [REDACTED]",
    ),
    ('{"api_key": "abc123xyz", "name": "x"}', '{"api_key": "[REDACTED]", "name": "x"}'),
    ('SECRET_KEY = "django-insecure-abc"', 'SECRET_KEY = "[REDACTED]"'),
    ("mysql -u root --password=hunter2 app", "mysql -u root --password=[REDACTED] app"),
    (f"OPENAI_API_KEY={FAKE_KEY}", "OPENAI_API_KEY=sk-[REDACTED]"),
]

UNTOUCHED = [
    "token = get_token()",
    "self.token = token",
    "def check(password: str, token: str | None = None) -> bool:",
    "    token: str = ''",
    "max_tokens = 4096\ntoken_budget=50000",
    'if token == "abc":',
    'API_KEY = os.environ["API_KEY"]',
    'headers = {"Authorization": f"Bearer {token}"}',
    "PASSWORD=${DB_PASSWORD}",
    '"password": password,',
    "for key, value in items: key = value",
    "GIT_AUTHOR_NAME=Jane\nauthor: Jane Doe",
    "task-abcdefghijklmnopqrstuvwxyz012345 and the sk-learn-style-library-name",
    "ls .git/hooks/pre-commit.sample",
    '@app.post("/webhook/stripe")',
    "http://localhost:8080/path@x https://example.com/a?b=1",
    "tests/test_x.py::test_login PASSED [ 42%]",
]


@pytest.mark.parametrize(("text", "expected"), REDACTED)
def test_each_secret_shape_is_redacted_and_the_rest_kept(text: str, expected: str) -> None:
    assert scrub_text(text) == expected
    assert scrub_text(expected) == expected, "scrubbing twice changes nothing"


@pytest.mark.parametrize("text", UNTOUCHED)
def test_code_and_ordinary_text_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_values_of_secret_variables_are_redacted_wherever_they_appear() -> None:
    token, password = f"Zq{secrets.token_hex(8)}", f"Pw{secrets.token_hex(5)}"
    remember_environment(
        {
            "MY_SERVICE_TOKEN": token,
            "CACHE_URL": f"redis://me:{password}@cache/0",
            "GREETING": f"hello {token[:4]} world",  # not a secret: its value stays visible
            "SSH_AUTH_SOCK": "/tmp/ssh-agent.sock.1234",  # a path: where a secret is, not one
        }
    )
    tail = f"hello {token[:4]} world /tmp/ssh-agent.sock.1234"
    printed = f"a={token}; the password is {password}. {tail}"
    assert scrub_text(printed) == f"a=[REDACTED]; the password is [REDACTED]. {tail}"


def test_a_16_kb_output_is_scrubbed_in_well_under_a_millisecond_or_so() -> None:
    source = (Path(__file__).parents[2] / "src/localhand/run/agent.py").read_text()
    text = (source * 8)[:16384]
    scrub_text(text)
    best = min(_timed(scrub_text, text) for _ in range(7))
    assert best < 0.005, f"{best * 1000:.2f} ms for 16 KB"  # ~0.3 ms here; slack for slow CI


def _timed(function: object, text: str) -> float:
    started = time.perf_counter()
    function(text)  # type: ignore[operator]
    return time.perf_counter() - started


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("DATABASE_URL", DB_URL, True),
        ("MONGO", "mongodb+srv://u:pw@cluster0.x.net", True),
        ("CACHE", "redis://:pw@cache:6379", True),
        ("BROKER", "amqps://guest:pw@mq/vhost", True),
        ("NOTIFY", SLACK, True),
        ("DEPLOY_HOOK", "https://ci.example/webhook/a1b2c3d4e5f6a7b8c9d0", True),
        ("MIRROR", f"https://{GHP}@github.com/o/r", True),
        ("HOMEPAGE", "https://example.com/docs?page=2", False),
        ("DB_HOST", "db.internal:5432", False),
    ],
)
def test_variables_holding_urls_with_credentials_are_secrets(
    name: str, value: str, secret: bool
) -> None:
    assert is_secret(name, value) is secret


def test_every_tool_result_is_scrubbed_and_the_call_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(ENV_FILE)
    run = ToolCall("run_command", {"command": "cat .env"})
    with default_tools(tmp_path) as registry:
        results = [registry.execute(run), registry.execute(ToolCall("read_file", {"path": ".env"}))]
    assert run.arguments == {"command": "cat .env"}
    for result in results:
        assert result.ok
        assert "DATABASE_URL=postgresql+psycopg2://u:[REDACTED]@db/x" in result.content
        assert "OPENAI_API_KEY=sk-[REDACTED]" in result.content
        assert "SLACK_HOOK=https://hooks.slack.com/services/[REDACTED]" in result.content
        for secret in (DB_PASSWORD, FAKE_KEY, "abcdefghijklmnopqrstuvwx"):
            assert secret not in result.content


def test_the_model_and_the_store_never_see_the_secrets(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(ENV_FILE)
    db = tmp_path / "runs.db"
    store = Store(db)
    bus = EventBus()
    bus.subscribe(store.recorder())
    model = ScriptedModel(
        [call("run_command", command="cat .env"), f"The database is {DB_URL}, hook {SLACK}"]
    )
    result = Agent(model, workspace, bus=bus, task_id="t1").run(f"Check {DB_URL}")
    assert bus.errors == []
    tool_message = model.calls[1].messages[-1]
    assert tool_message["role"] == "tool" and "u:[REDACTED]@db" in tool_message["content"]
    assert DB_PASSWORD not in json.dumps([c.messages[2:] for c in model.calls])
    assert DB_PASSWORD in result.output, "the Result handed back to the caller is the model's"
    store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert b"u:[REDACTED]@db" in stored
    for secret in (DB_PASSWORD, FAKE_KEY, "abcdefghijklmnopqrstuvwx"):
        assert secret.encode() not in stored
    events = Store(db).events(Store(db).runs(1)[0].id)
    assert any("[REDACTED]" in (e.data.get("result_summary") or "") for e in events)


# -- localhand's own environment, read from outside ---------------------------------------------

FORGET = """
import os, subprocess, sys
from localhand.safety.secrets.own_env import forget_secrets
os.environ.pop("STALE_TOKEN")  # unset before: gone from os.environ, its bytes still in /proc
removed = forget_secrets()
child = subprocess.run(["env"], capture_output=True, text=True).stdout
print(json.dumps({"removed": sorted(removed), "key": os.environ.get("OPENAI_API_KEY"),
                  "db": os.environ.get("DATABASE_URL"), "child": child}), flush=True)
sys.stdin.readline()
"""


def _environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {k.decode(): v.decode() for k, v in pairs}


@LINUX
def test_forget_secrets_empties_the_process_environment_seen_in_proc(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": FAKE_KEY,
        "DATABASE_URL": DB_URL,
        "GITHUB_TOKEN": GHP,
        "STALE_TOKEN": "stale-value-0123",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "MY_SETTING": "kept",
    }
    with subprocess.Popen(
        [sys.executable, "-c", "import json\n" + FORGET],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        report = json.loads(process.stdout.readline())
        seen = _environ_of(process.pid)
        raw = Path(f"/proc/{process.pid}/environ").read_bytes()
        process.stdin.write("\n")
        process.stdin.close()
    for secret in (FAKE_KEY, DB_PASSWORD, GHP, "stale-value-0123"):
        assert secret.encode() not in raw
        assert secret not in report["child"], "a child process does not inherit it either"
    assert {"OPENAI_API_KEY", "DATABASE_URL", "GITHUB_TOKEN"} <= set(report["removed"])
    assert {"PATH", "MY_SETTING", "SSL_CERT_FILE"} <= set(seen)  # a path is not a secret
    assert report["key"] == FAKE_KEY, "the backend still reads its key, inside the process"
    assert report["db"] is None


@LINUX
def test_a_real_run_keeps_no_secret_in_its_environment_yet_uses_the_key(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".env").write_text(ENV_FILE)
    seen: dict[str, object] = {}

    def first(_body: object) -> dict:
        # Asked while the run is going, settings long read: what /proc shows a command now.
        seen["environ"] = Path(f"/proc/{seen['pid']}/environ").read_bytes()
        command = f"cat .env; tr '\\0' '\\n' < /proc/{seen['pid']}/environ"
        return {"tool_calls": [{"function": {"name": "run_command",
                                             "arguments": {"command": command}}}]}  # fmt: skip

    script = [first, {"content": f"Done. The database is {DB_URL}"}]
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "OPENAI_API_KEY": FAKE_KEY,
        "DATABASE_URL": DB_URL,
        "GITHUB_TOKEN": GHP,
        "LOCALHAND_DB": str(tmp_path / "runs.db"),
    }
    with FakeOllama(script, models={"qwen3:8b": {}}) as server:
        argv = [sys.executable, "-m", "localhand", "run", "Look at the settings", "--workspace",
                str(workspace), "--backend", "openai", "--host", f"{server.url}/v1", "--model",
                "qwen3:8b", "--approve", "never", "--json"]  # fmt: skip
        with subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as process:
            seen["pid"] = process.pid
            out, err = process.communicate(timeout=60)
        requests = server.openai_requests
    assert process.returncode == 3, err  # unverified: no checks
    assert [r.headers.get("Authorization") for r in requests] == [f"Bearer {FAKE_KEY}"] * 2
    environ = seen["environ"]
    assert isinstance(environ, bytes) and b"PATH=" in environ
    for secret in (FAKE_KEY, DB_PASSWORD, GHP):
        assert secret.encode() not in environ, "not in localhand's /proc/<pid>/environ"
        assert secret not in json.dumps(requests[1].body), "nor in what the model was sent"
    tool_result = requests[1].body["messages"][-1]["content"]
    assert "u:[REDACTED]@db" in tool_result
    shown = _localhand("show", "last", "--json", env=env)
    assert "[REDACTED]" in shown.stdout
    for secret in (FAKE_KEY, DB_PASSWORD, GHP):
        assert secret not in shown.stdout, "nor in the store"
    assert json.loads(out)["status"] == "unverified"  # no checks: the model's word only


# -- `localhand show` and terminal escapes --------------------------------------------------------

HOSTILE = (
    "\x1b]52;c;cm0gLXJmIH4K\x07"  # write to the clipboard
    "\x1b[2J\x1b[H"  # clear the screen, cursor home
    "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # a link hiding its target
    "\x9b31m"  # C1 CSI
    "\x07\x1b[1A\r"  # bell, cursor up, carriage return
    "\u202eevil"  # right-to-left override
)
RAW_CONTROLS = ("\x1b", "\x9b", "\x07", "\u202e", "\r")


def _hostile_run(tmp_path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    """A real run whose task, file and answer all hold terminal escapes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "banner.txt").write_text(f"before {HOSTILE} after\n")
    script = [
        {"tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "banner.txt"}}}]},
        {"content": f"Read it: {HOSTILE} done\nsecond line"},
    ]
    env = {**os.environ, "NO_COLOR": "1", "LOCALHAND_DB": str(tmp_path / "runs.db")}
    with FakeOllama(script, models={"qwen3:8b": {}}) as server:
        env["OLLAMA_HOST"] = server.url
        ran = _localhand(
            "run", f"Show {HOSTILE} the banner", "--workspace", str(workspace), "--model",
            "qwen3:8b", "--agentic", *flags, env=env,
        )  # fmt: skip
    assert ran.returncode == 3, ran.stderr  # unverified: no checks
    return ran, env


def _no_raw_controls(*streams: str) -> None:
    for stream in streams:
        for control in RAW_CONTROLS:
            assert control not in stream


def test_show_writes_stored_escapes_out_instead_of_sending_them(tmp_path: Path) -> None:
    _, env = _hostile_run(tmp_path, "--json")
    stored = sqlite3.connect(tmp_path / "runs.db").execute("SELECT data FROM events").fetchall()
    assert any("\x1b]52" in json.loads(row[0]).get("result_summary", "") for row in stored)

    shown = _localhand("show", "last", env=env)
    assert shown.returncode == 0, shown.stderr
    _no_raw_controls(shown.stdout, shown.stderr)
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in shown.stdout, "written out, in the timeline"
    assert (
        "Read it: \\x1b]52;c;" in shown.stdout and "\\u202eevil done\nsecond line" in shown.stdout
    )
    as_json = _localhand("show", "last", "--json", env=env)
    assert "\x9b" not in as_json.stdout and "\\u009b" in as_json.stdout
    assert "\x1b" not in as_json.stdout


def test_the_live_view_and_the_answer_write_escapes_out_too(tmp_path: Path) -> None:
    ran, _ = _hostile_run(tmp_path)
    _no_raw_controls(ran.stdout, ran.stderr)
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in ran.stderr
    assert ran.stdout.startswith("Read it: \\x1b]52;c;")
