"""Rules for commands that change files: copying, moving, linking, editing in place,
permissions, raw copies (dd) and archives. Each flags where it writes (see ``Analyzer.write``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localhand.safety.risk.shellsyntax import Word
from localhand.safety.risk.types import DANGEROUS, MODERATE, Feed, Rule, options, registry

if TYPE_CHECKING:
    from localhand.safety.risk.classify import Analyzer

FILE_RULES: dict[str, Rule] = {}
rule = registry(FILE_RULES)


@rule("chmod", "chown", "chgrp", "chattr", "setfacl", "chflags")
def _chmod(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    _, values, operands = options(args, ("-m", "-x", "--reference"))
    if name not in ("setfacl",) and "--reference" not in values and operands:
        spec, operands = operands[0].text, operands[1:]
    else:
        spec = ""
    what = "permissions" if name in ("chmod", "setfacl", "chattr", "chflags") else "owner"
    for target in operands:
        place = a.where.locate(target)
        if place.kind in ("outside", "system", "root", "home", "device", "git"):
            a.flag(
                DANGEROUS,
                f"changes the {what} of {place.shown}, outside the workspace"
                if place.kind != "git"
                else f"changes the {what} of {place.shown} in .git",
            )
        elif name == "chmod" and (
            "s" in spec or (spec.isdigit() and len(spec) == 4 and spec[0] in "2467")
        ):
            a.flag(DANGEROUS, f"sets the setuid or setgid bit on {place.shown}")
        elif name == "chmod" and (
            (spec.endswith(("7", "6")) and spec.isdigit()) or "o+w" in spec or "a+w" in spec
        ):
            a.flag(MODERATE, f"makes {place.shown} writable by everyone")
        else:
            a.flag(MODERATE, f"changes the {what} of {place.shown}")


@rule("dd")
def _dd(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    for word in args:
        key, eq, value = word.text.partition("=")
        if eq and key == "of":
            a.write(Word(value, word.dynamic, word.leading_dynamic, word.subs))
        elif eq and key == "if" and a.where.locate(Word(value)).kind == "device":
            a.flag(MODERATE, f"reads the raw device {value}")
    if not any(w.text.startswith("of=") for w in args):
        a.flag(MODERATE, "copies raw data (dd)")


@rule(
    "cp",
    "mv",
    "install",
    "ln",
    "rsync",
    "tee",
    "truncate",
    "touch",
    "mkdir",
    "sort",
    "uniq",
    "sed",
    "tar",
    "unzip",
    "patch",
    "split",
    "csplit",
    "awk",
    "gawk",
    "mawk",
)
def _writers(a: Analyzer, name: str, args: list[Word], feed: Feed | None) -> None:
    with_value = (
        "-t",
        "--target-directory",
        "-o",
        "--output",
        "-C",
        "--directory",
        "-d",
        "-f",
        "--file",
        "-e",
        "--expression",
        "-s",
        "-m",
        "-S",
        "-F",
        "-v",
    )
    flags, values, operands = options(args, with_value)
    if name in ("cp", "mv", "install", "ln", "rsync"):
        if name == "rsync" and any(":" in w.text for w in operands):
            a.network = True
        dest = values.get("-t") or values.get("--target-directory")
        if dest is None and len(operands) > (0 if name == "ln" else 1):
            dest, operands = operands[-1], operands[:-1]
        if dest is not None:
            a.write(
                dest,
                {"ln": "creates a link at", "mv": "moves files to"}.get(name, "copies files to"),
            )
        for source in operands:
            if name == "mv":
                a.delete(source, recursive=True, verb="moves away")
            elif name == "rsync" and "--delete" in flags and dest is not None:
                a.delete(dest, recursive=True, verb="deletes files in")
    elif name in ("tee", "truncate"):
        for target in operands:
            a.write(target, "truncates" if name == "truncate" else "writes")
    elif name in ("touch", "mkdir"):
        for target in operands:
            a.create(target, "creates" if name == "mkdir" else "touches")
    elif name in ("sort", "uniq"):
        if "-o" in values:
            a.write(values["-o"])
        elif name == "uniq" and len(operands) > 1:
            a.write(operands[1])
    elif name == "sed":
        _sed(a, args, flags, values, operands)
    elif name in ("awk", "gawk", "mawk"):
        program = values.get("-f") or (operands[0] if operands else Word(""))
        if any(token in program.text for token in ("system(", "| getline", '|"', "print >")):
            a.flag(MODERATE, "runs commands or writes files from awk")
    elif name in ("tar", "unzip"):
        _archive(a, name, args, flags, values)
    else:
        a.flag(MODERATE, f"changes files ({name})")


def _sed(
    a: Analyzer, args: list[Word], flags: set[str], values: dict[str, Word], operands: list[Word]
) -> None:
    scripts = [values[k] for k in ("-e", "--expression", "-f") if k in values]
    if not scripts and operands:
        scripts, operands = [operands[0]], operands[1:]
    for script in scripts:
        text = script.text.strip()
        tail = text.rsplit(text[1], 1)[-1] if text.startswith("s") and len(text) > 1 else ""
        if text.startswith("e") or ("e" in tail and tail.isalnum()):
            a.flag(DANGEROUS, "runs shell commands from sed (its e command)")
    in_place = any(
        w.text.startswith(("-i", "--in-place"))
        or (w.text.startswith("-") and not w.text.startswith("--") and "i" in w.text)
        for w in args
    )
    for target in operands if in_place else []:
        a.write(target, "edits")


def _archive(
    a: Analyzer, name: str, args: list[Word], flags: set[str], values: dict[str, Word]
) -> None:
    first = args[0].text if args else ""
    if any("exec" in w.text or "--to-command" in w.text for w in args):
        a.flag(DANGEROUS, f"runs commands from {name}")
    extracting = (
        name == "unzip"
        or "-x" in flags
        or "--extract" in flags
        or (not first.startswith("-") and "x" in first)
    )
    creating = "-c" in flags or "--create" in flags or (not first.startswith("-") and "c" in first)
    if extracting and "-l" not in flags:
        where = values.get("-C") or values.get("--directory") or values.get("-d") or Word(".")
        a.write(
            where,
            "extracts files into",
        )
    elif creating and "-f" in values:
        a.write(values["-f"])
