"""The box's environment is an allow-list: what shells and toolchains need, what the user names
in ``[sandbox] env``, and what localhand sets itself; everything else stays out, secret-looking
or not. Connection strings (``AccountKey=``, ``Password=`` in ``;``-separated strings) are
scrubbed wherever text goes: the model, the store, the events and the spans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from localhand.config.settings import Settings, load_settings
from localhand.errors import ConfigError
from localhand.events import EventBus
from localhand.models.scripted import ScriptedModel, call
from localhand.run.task import Task
from localhand.safety.box.sandbox import Sandbox, use_sandbox
from localhand.safety.secrets.environment import BOX_NAMES, box_environment
from localhand.safety.secrets.patterns import redact
from localhand.session.door import Session
from localhand.store import Store
from localhand.tools import run_shell
from trust_helpers import pin
from workspaces import user_file

ACCOUNT_KEY = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A+/Q=="
AZURE = (
    "DefaultEndpointsProtocol=https;AccountName=acme;"
    f"AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net"
)
SQL_PASSWORD = "Tr0ub4dor&3xyz"
SQL = f"Server=tcp:db.example.com,1433;Database=app;User ID=sa;Password={SQL_PASSWORD};"
BUS_KEY = "k3yV4lueOfTheServiceBus0123456789abcdefABC="
SERVICE_BUS = (
    f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={BUS_KEY}"
)
SAS_SIGNATURE = "q9Zx1ab2cd3ef4gh5ij6kl7mn8op9qr0st"
SAS = (
    "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature="
    f"sv=2022-11-02&ss=b&srt=co&sp=rl&se=2030-01-01&spr=https&sig={SAS_SIGNATURE}"
)
ODBC_PASSWORD = "plainpassword"
ODBC = f"Driver={{ODBC Driver 18}};Server=db;Uid=sa;Pwd={ODBC_PASSWORD}"
SECRETS = (ACCOUNT_KEY, SQL_PASSWORD, BUS_KEY, SAS_SIGNATURE, ODBC_PASSWORD)


@pytest.fixture
def no_sandbox() -> Iterator[None]:
    with use_sandbox(Sandbox(mode="off")):
        yield


def names_in(output: str) -> set[str]:
    return {line.split("=", 1)[0] for line in output.splitlines() if "=" in line}


# -- the allow-list ------------------------------------------------------------------------------

BASE = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "LC_TIME": "C",
    "TZ": "UTC",
    "VIRTUAL_ENV": "/w/.venv",
    "CARGO_HOME": "/home/me/.cargo",
    "GOPATH": "/home/me/go",
    "JAVA_HOME": "/usr/lib/jvm/java-17",
    "NVM_DIR": "/home/me/.nvm",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca.pem",  # CERT in its name: a path, kept
    "LOCALHAND_REPORT_DIR": "/tmp/reports",
    # out: not on the list, whatever they hold
    "AZURE_STORAGE_CONNECTION_STRING": AZURE,
    "MY_SETTING": "1",
    "DJANGO_SETTINGS_MODULE": "app.settings",
    # out: on the list or a localhand name, but holding a secret
    "GOPROXY": "https://me:hunter2pass@proxy.example.com",
    "LOCALHAND_MCP_TOKEN": "f00dbabe",
    "LC_ALL": "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
}
KEPT = {
    "PATH", "HOME", "LANG", "LC_TIME", "TZ", "VIRTUAL_ENV", "CARGO_HOME", "GOPATH", "JAVA_HOME",
    "NVM_DIR", "SSL_CERT_FILE", "LOCALHAND_REPORT_DIR",
}  # fmt: skip


def test_only_the_allow_list_passes_and_nothing_secret_on_it() -> None:
    env = box_environment(base=BASE)
    assert set(env) >= KEPT
    assert not (set(BASE) - KEPT) & set(env), set(BASE) - KEPT & set(env)
    assert env["TERM"] == "dumb" and env["GIT_TERMINAL_PROMPT"] == "0"  # QUIET_ENV on top


def test_what_the_user_names_passes_a_name_as_it_is_a_pattern_never_a_secret() -> None:
    base = {
        **BASE,
        "DATABASE_URL": "postgresql://app:pw12345678@db/app",
        "MYAPP_MODE": "test",
        "MYAPP_API_KEY": "sk-0123456789abcdef0123456789",
        "MYAPPLE": "no",
    }
    env = box_environment(named=("DATABASE_URL", "MYAPP_*"), base=base)
    assert env["DATABASE_URL"] == base["DATABASE_URL"], "named whole: the user asked for it"
    assert env["MYAPP_MODE"] == "test"
    assert "MYAPP_API_KEY" not in env, "a pattern never lets a secret-looking variable through"
    assert "MYAPPLE" not in env


def test_localhands_own_variables_pass_unfiltered() -> None:
    env = box_environment({"LOCALHAND_REPORTER": "/opt/x", "SOME_TOKEN": "mine"}, base=BASE)
    assert env["LOCALHAND_REPORTER"] == "/opt/x" and env["SOME_TOKEN"] == "mine"


def test_the_toolchains_variables_are_on_the_list() -> None:
    needed = "VIRTUAL_ENV CARGO_HOME RUSTUP_HOME GOPATH GOROOT GOCACHE JAVA_HOME NVM_DIR PYENV_ROOT"
    assert set(needed.split()) <= BOX_NAMES


def test_a_command_sees_the_allow_list_the_named_and_the_callers_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_sandbox: None
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", AZURE)
    monkeypatch.setenv("PLAIN_SETTING", "1")
    monkeypatch.setenv("MYAPP_MODE", "test")
    monkeypatch.setenv("GOPATH", "/srv/go")
    with use_sandbox(Sandbox(mode="off", env=("MYAPP_*",))):
        done = run_shell("env", tmp_path, env={"LOCALHAND_EXTRA": "1"}, keep_env=["PLAIN_SETTING"])
    shown = names_in(done.output)
    assert {"GOPATH", "MYAPP_MODE", "PLAIN_SETTING", "LOCALHAND_EXTRA", "PATH"} <= shown
    assert "AZURE_STORAGE_CONNECTION_STRING" not in shown and ACCOUNT_KEY not in done.output


def test_a_run_gives_the_box_what_sandbox_env_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real door, in the real sandbox where it can run: the model's command sees
    the user's named variables and not the connection string in localhand's environment."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", AZURE)
    monkeypatch.setenv("MYAPP_MODE", "test")
    monkeypatch.setenv("UNNAMED_SETTING", "1")
    model = ScriptedModel([call("run_command", command="env | sort"), "done"])
    task = Task("Show the environment", workspace=workspace, agentic=True)
    Session(task, Settings(sandbox_env=("MYAPP_*",)), model=model).run()
    seen = model.calls[1].messages[-1]["content"]
    assert "MYAPP_MODE=test" in seen and "PATH=" in seen
    assert "UNNAMED_SETTING" not in seen and "AZURE_STORAGE" not in seen


# -- [sandbox] env in the configuration ------------------------------------------------------------


def test_sandbox_env_is_read_from_the_users_config_and_checked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    user_file(home / ".config", '[sandbox]\nenv = ["DATABASE_URL", "MYAPP_*"]\n')
    settings = load_settings(env={"HOME": str(home)}, cwd=tmp_path)
    assert settings.sandbox_env == ("DATABASE_URL", "MYAPP_*")
    for bad in ('"DATABASE_URL"', '["*"]', '["MY-VAR"]', "[1]"):
        user_file(home / ".config", f"[sandbox]\nenv = {bad}\n")
        with pytest.raises(ConfigError, match=r"\[sandbox\] env in .* must be a list of"):
            load_settings(env={"HOME": str(home)}, cwd=tmp_path)


def test_a_workspace_file_cannot_widen_the_boxs_environment(tmp_path: Path) -> None:
    (tmp_path / "localhand.toml").write_text('[sandbox]\nenv = ["AWS_*"]\n')
    pin(tmp_path / "localhand.toml")  # trusted, and still not obeyed for this key
    settings = load_settings(env={}, cwd=tmp_path, warn=lambda message: None)
    assert settings.sandbox_env == ()


# -- connection strings, scrubbed wherever text goes ---------------------------------------------


@pytest.mark.parametrize("text", [AZURE, SQL, SERVICE_BUS, SAS, ODBC, json.dumps({"c": AZURE})])
def test_connection_string_secrets_are_redacted_and_the_rest_kept(text: str) -> None:
    redacted = redact(text)
    assert not any(secret in redacted for secret in SECRETS), redacted
    assert "[REDACTED]" in redacted and redact(redacted) == redacted
    for kept in ("AccountName=acme", "Database=app", "SharedAccessKeyName=Root", "Uid=sa"):
        if kept in text:
            assert kept in redacted


@pytest.mark.parametrize(
    "text",
    ["OLDPWD=/root", "password=xyz is not in a connection string", "MyPassword=abc;",
     "SharedAccessKeyName=RootManageSharedAccessKey;", "--password=$PW;"],
)  # fmt: skip
def test_what_is_no_connection_string_secret_is_left_alone(text: str) -> None:
    assert redact(text) == text


def _spans(monkeypatch: pytest.MonkeyPatch) -> Any:
    """An in-memory exporter behind the run's tracer: a provider of this test's own, so the
    process's global one (which OpenTelemetry lets be set once) stays the telemetry tests'."""
    pytest.importorskip("opentelemetry.sdk.trace", reason="the OpenTelemetry SDK")
    from opentelemetry.sdk.trace import TracerProvider  # only where the SDK is installed
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # likewise
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # likewise
        InMemorySpanExporter,
    )

    from localhand.telemetry import spans  # loaded with the SDK's check above

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(spans, "tracer", lambda: provider.get_tracer("localhand"))
    return exporter


def test_a_printed_connection_string_reaches_no_model_store_event_or_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings_file = {"ConnectionStrings": {"Storage": AZURE, "Sql": SQL, "Bus": SERVICE_BUS}}
    (workspace / "appsettings.json").write_text(json.dumps(settings_file, indent=2))
    (workspace / "odbc.ini").write_text(f"{ODBC}\n{SAS}\n")
    exporter = _spans(monkeypatch)
    bus = EventBus()
    events: list[Any] = []
    bus.subscribe(events.append)
    model = ScriptedModel([call("run_command", command="cat appsettings.json odbc.ini"), "ok"])
    task = Task("Read the settings", workspace=workspace, agentic=True)
    session = Session(task, Settings(otel=True, otel_content=True), bus=bus, model=model)
    db = tmp_path / "runs.db"
    with session.recording(db=db):
        session.run()

    seen = json.dumps([c.messages for c in model.calls[1:]])
    assert "AccountKey=[REDACTED]" in seen and "Password=[REDACTED]" in seen
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    emitted = json.dumps([e.to_dict() for e in events], default=str)
    spans = exporter.get_finished_spans()
    assert spans, "the run was traced"
    traced = json.dumps([dict(span.attributes or {}) for span in spans], default=str)
    assert "AccountKey=[REDACTED]" in traced
    for secret in SECRETS:
        assert secret not in seen, secret
        assert secret.encode() not in stored, secret
        assert secret not in emitted, secret
        assert secret not in traced, secret
    store = Store(db)
    recorded = store.events(store.runs(1)[0].id)
    assert any("AccountKey=[REDACTED]" in json.dumps(e.data) for e in recorded)
