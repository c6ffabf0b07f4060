"""Commands that change the machine rather than the workspace: disks, services, users,
firewalls, scheduled jobs, system packages, processes that are not the task's, containers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localhand.safety.risk.shellsyntax import Word
from localhand.safety.risk.types import DANGEROUS, MODERATE, Feed, Rule

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

_ALWAYS: dict[str, str] = {
    **dict.fromkeys(
        "mkfs mke2fs mkswap fdisk sfdisk cfdisk gdisk sgdisk parted wipefs blkdiscard "
        "cryptsetup lvremove vgremove pvremove mdadm zpool badblocks".split(),
        "changes disks or file systems",
    ),
    **dict.fromkeys("mount umount losetup swapoff swapon".split(), "mounts or unmounts disks"),
    **dict.fromkeys(
        "shutdown reboot halt poweroff init telinit".split(), "shuts down or restarts the machine"
    ),
    **dict.fromkeys("iptables ip6tables nft ufw firewall-cmd".split(), "changes the firewall"),
    **dict.fromkeys(
        "useradd userdel usermod groupadd groupdel passwd chpasswd visudo adduser deluser chsh "
        "chfn gpasswd".split(),
        "changes user accounts",
    ),
    **dict.fromkeys("insmod rmmod modprobe kexec".split(), "changes the running kernel"),
    **dict.fromkeys(("at", "batch"), "schedules commands to run later"),
    **dict.fromkeys(("killall", "pkill", "killall5"), "kills processes by name, not just its own"),
    "nsenter": "enters another process's namespaces",
}
"""Always dangerous, with the reason (the command's name is added)."""
_READ_ONLY_SUBCOMMANDS = {
    "systemctl": {
        "status",
        "show",
        "list-units",
        "list-unit-files",
        "cat",
        "is-active",
        "is-enabled",
        "is-failed",
        "list-timers",
        "list-sockets",
        "help",
    },
    "service": {"--status-all", "status"},
    "crontab": {"-l"},
    "sysctl": {"-a", "-n"},
    "ip": {"a", "addr", "address", "route", "r", "link", "neigh", "show", "-br", "-c"},
    "launchctl": {"list", "print"},
}
_SYSTEM_PACKAGES = frozenset(
    "apt apt-get aptitude dpkg dnf yum rpm zypper pacman apk snap flatpak emerge port".split()
)
_PACKAGE_READS = frozenset(
    "update search show list info policy -Q -Ss -Si -l -L --list -s --status depends".split()
)
_PACKAGE_MANAGERS = frozenset(
    "pip pip3 pipx uv poetry pdm conda mamba micromamba npm npx pnpm yarn gem bundle cargo "
    "go composer brew".split()
)


def _always(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    a.flag(DANGEROUS, f"{_ALWAYS[name]} ({name})")


def _service(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    texts = [w.text for w in args if not w.text.startswith("--") or w.text == "--status-all"]
    reads = _READ_ONLY_SUBCOMMANDS[name]
    if name == "ip":
        if any(t in ("add", "del", "delete", "set", "flush", "change", "replace") for t in texts):
            a.flag(DANGEROUS, "changes network settings (ip)")
        return
    if name == "sysctl":
        if any("=" in t or t == "-w" for t in texts):
            a.flag(DANGEROUS, "changes kernel settings (sysctl -w)")
        return
    if not texts or any(t in reads for t in texts[:2]):
        return
    what = {"crontab": "changes scheduled jobs", "launchctl": "changes system services"}
    a.flag(DANGEROUS, f"{what.get(name, 'changes system services')} ({name} {texts[0]})")


def _kill(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    texts = [w.text for w in args]
    start = 2 if texts[:1] in (["-s"], ["-n"], ["--signal"]) else int(texts[:1] != ["--"])
    start = start if texts[:1] and texts[0].startswith("-") else 0
    pids = texts[start + 1 :] if texts[start : start + 1] == ["--"] else texts[start:]
    if "-1" in pids:
        a.flag(DANGEROUS, "kills every process it can (kill -1)")
    else:
        a.flag(MODERATE, "stops a process (kill)")


def _system_packages(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    texts = [w.text for w in args]
    action = next((t for t in texts if not t.startswith("-")), texts[0] if texts else "")
    if action in _PACKAGE_READS or (texts and texts[0] in _PACKAGE_READS):
        a.network = True
        a.flag(MODERATE, f"updates or queries system packages ({name} {action})")
    else:
        a.flag(DANGEROUS, f"changes system packages ({name} {action})".replace(" )", ")"))


def _packages(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    texts = [w.text for w in args if not w.text.startswith("-")]
    action = texts[0] if texts else ""
    if name == "npx" or action in ("install", "add", "i", "get", "update", "upgrade", "sync", "x"):
        a.network = True
        a.flag(MODERATE, f"installs packages ({name} {action}), which can run their setup code")
    elif action in ("uninstall", "remove", "rm"):
        a.flag(MODERATE, f"removes packages ({name} {action})")
    else:
        a.flag(MODERATE, f"runs {name} {action}".rstrip())


def _containers(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    texts = [w.text for w in args]
    if "--privileged" in texts or any(t.startswith(("/:/", "/:", "--volume=/:")) for t in texts):
        a.flag(DANGEROUS, f"runs a container with access to the whole machine ({name})")
    elif any(t in ("rm", "rmi", "prune", "kill") for t in texts[:3]):
        a.flag(DANGEROUS, f"deletes containers, images or volumes ({name})")
    else:
        a.flag(MODERATE, f"runs {name}")


SYSTEM_RULES: dict[str, Rule] = {
    **dict.fromkeys(_ALWAYS, _always),
    **dict.fromkeys(_READ_ONLY_SUBCOMMANDS, _service),
    **dict.fromkeys(_SYSTEM_PACKAGES, _system_packages),
    **dict.fromkeys(_PACKAGE_MANAGERS, _packages),
    **dict.fromkeys(("docker", "podman", "nerdctl"), _containers),
    "kill": _kill,
}
