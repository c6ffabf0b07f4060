"""A small bash parser for the risk classifier: which commands a line would run, and with what.

Not a full bash grammar. It finds every simple command through ``;`` ``&&`` ``||`` ``|`` ``&``
and newlines, ``( )`` and ``{ }`` groups, ``$( )``, backticks, ``<( )`` and here-documents;
removes quotes as bash does; decodes ``$'\\x72\\x6d'``; expands ``{a,b}`` lists, ``~`` and the
variables the line itself assigns (``a=rm; $a -rf /``), and marks what only exists at run time.

One pass over the text with an index, no backtracking regexes, so hostile input costs linear
time. Nesting deeper than ``MAX_DEPTH`` raises ``TooDeep``: the caller refuses what it cannot see.
Anything malformed (an unclosed quote) is parsed as far as it goes and noted, never raised.
"""

from __future__ import annotations

from localhand.safety.risk.shellsyntax import (
    Command,
    Pipeline,
    Redirect,
    Script,
    Word,
    decode_escapes,
    finish_word,
    is_assignment,
)

MAX_DEPTH = 24
"""Nested substitutions, groups and ``bash -c`` strings deeper than this are not analysed."""
_WORD_END = frozenset(" \t\n;&|()<>")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_SPECIAL_PARAMS = frozenset("@*#?$!-0123456789")
_REDIRECTS = ("<<<", "<<-", "&>>", "<<", ">>", "&>", ">&", "<&", "<>", ">|", ">", "<")


class TooDeep(Exception):
    """The text nests substitutions or shells deeper than ``MAX_DEPTH``."""


def parse(text: str, *, home: str = "~", variables: dict[str, str | None] | None = None,
          depth: int = 0) -> Script:  # fmt: skip
    """Parse ``text`` as bash would. ``variables`` holds what earlier lines assigned (``None``
    for a value only known at run time) and is updated in place. Raises only ``TooDeep``."""
    parser = _Parser(text, home, variables if variables is not None else {}, depth)
    return parser.parse_list(None)


class _Parser:
    def __init__(self, text: str, home: str, variables: dict[str, str | None], depth: int):
        if depth > MAX_DEPTH:
            raise TooDeep
        self.text, self.n, self.i = text, len(text), 0
        self.home, self.vars, self.depth = home, variables, depth
        self.notes: list[str] = []
        self.pending: list[tuple[Redirect, str, bool, bool]] = []

    def nested(self, text: str) -> Script:
        return parse(text, home=self.home, variables=self.vars, depth=self.depth + 1)

    # -- lists, pipelines, commands -------------------------------------------------------------
    def parse_list(self, closer: str | None) -> Script:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooDeep
        script, pipeline, cmd = Script(notes=self.notes), Pipeline(), Command()
        function: str | None = None
        text, closed = self.text, closer is None

        def end_command() -> None:
            nonlocal cmd
            if not cmd.empty():
                self._remember(cmd)
                pipeline.commands.append(cmd)
            cmd = Command()

        def end_pipeline() -> None:
            nonlocal pipeline
            end_command()
            if pipeline.commands:
                script.pipelines.append(pipeline)
            pipeline = Pipeline()

        while self.i < self.n:
            c, ahead = text[self.i], text[self.i : self.i + 3]
            if c in " \t" or ahead.startswith("\\\n"):
                self.i += 1 if c in " \t" else 2
            elif c == "\n":
                self.i += 1
                end_pipeline()
                self._read_heredocs()
            elif c == "#":
                end = text.find("\n", self.i)
                self.i = self.n if end == -1 else end
            elif c == ")" and closer == ")":
                self.i += 1
                closed = True
                break
            elif c == ")":  # a `case` pattern's end: what came before it was the pattern
                self.i += 1
                cmd.words.clear()
            elif c == ";":
                self.i += 2 if ahead[:2] in (";;", ";&") else 1
                end_pipeline()
            elif ahead[:2] in ("&&", "||"):
                self.i += 2
                end_pipeline()
            elif c == "&" and ahead[:2] != "&>":
                self.i += 1
                end_pipeline()
            elif c == "|":
                self.i += 2 if ahead[:2] == "|&" else 1
                end_command()
            elif c in "<>&" and ahead[:2] not in ("<(", ">("):
                self._redirect(cmd)
            elif ahead[:2] == "((" and not cmd.words:
                self.i += 2
                cmd.subs.extend(self._arithmetic())
            elif (
                c == "("
                and self._next_char(self.i + 1) == ")"
                and (len(cmd.words) == 1 or function is not None)
            ):
                function = cmd.words.pop().text if cmd.words else function  # name() { …; }
                self.i = text.index(")", self.i) + 1
            elif c == "(":
                self.i += 1
                cmd.body, cmd.function, function = self.parse_list(")"), function, None
            elif c.isdigit() and self._fd_prefix():
                continue
            else:
                start = self.i
                words = self._word()
                raw = text[start : self.i]
                if raw == "{" and not cmd.words:
                    cmd.body, cmd.function, function = self.parse_list("}"), function, None
                elif raw == "}" and closer == "}" and not cmd.words:
                    closed = True
                    break
                elif len(cmd.words) == 1 and cmd.words[0].text == "function":
                    cmd.words.clear()
                    function = raw
                elif not cmd.words and len(words) == 1 and is_assignment(words[0]):
                    name, _, value = words[0].raw.partition("=")
                    cmd.assignments.append((name.rstrip("+"), self._value(words[0], value)))
                else:
                    cmd.words.extend(words)
        end_pipeline()
        if not closed:
            self.notes.append(f"an unclosed '{'(' if closer == ')' else '{'}'")
        self.depth -= 1
        return script

    def _remember(self, cmd: Command) -> None:
        """Track assignments, so that ``a=rm; $a -rf /`` is seen through."""
        if not cmd.words:
            for name, value in cmd.assignments:
                self.vars[name] = None if value.dynamic else value.text
            return
        head, args = cmd.words[0].text, cmd.words[1:]
        if head in ("export", "declare", "typeset", "local", "readonly"):
            for word in args:
                name, eq, assigned = word.text.partition("=")
                if eq and name.isidentifier():
                    self.vars[name] = None if word.dynamic else assigned
        elif head in ("for", "select") and args and args[0].text.isidentifier():
            items = args[2:] if len(args) > 1 and args[1].text == "in" else []
            first = items[0] if items else None
            self.vars[args[0].text] = first.text if first and not first.dynamic else None
        elif head in ("read", "unset", "mapfile", "readarray"):
            for word in args:
                if word.text.isidentifier():
                    self.vars[word.text] = None

    def _value(self, word: Word, raw_value: str) -> Word:
        name_len = len(word.raw) - len(raw_value)
        text = word.text[name_len:] if word.text[:name_len] == word.raw[:name_len] else word.text
        return Word(text, word.dynamic, word.leading_dynamic, word.subs, raw_value)

    def _next_char(self, j: int) -> str:
        while j < self.n and self.text[j] in " \t":
            j += 1
        return self.text[j : j + 1]

    def _fd_prefix(self) -> bool:
        """Skip the ``2`` of ``2>file``; False when the digits are a word of their own."""
        j = self.i
        while j < self.n and self.text[j].isdigit():
            j += 1
        if j < self.n and self.text[j] in "<>":
            self.i = j
            return True
        return False

    def _redirect(self, cmd: Command) -> None:
        op = next(op for op in _REDIRECTS if self.text.startswith(op, self.i))
        self.i += len(op)
        while self.i < self.n and self.text[self.i] in " \t":
            self.i += 1
        redirect = Redirect(op)
        cmd.redirects.append(redirect)
        if self.i >= self.n or self.text[self.i] in _WORD_END - {"<", ">"}:
            self.notes.append(f"a '{op}' with nothing after it")
            return
        start = self.i
        words = self._word()
        raw = self.text[start : self.i]
        redirect.target = words[0] if words else Word("")
        if op in ("<<", "<<-"):
            quoted = any(q in raw for q in "'\"\\")
            self.pending.append((redirect, redirect.target.text, quoted, op == "<<-"))
        elif op == "<<<":
            redirect.heredoc = redirect.target.text

    def _read_heredocs(self) -> None:
        pending, self.pending = self.pending, []
        for redirect, delimiter, quoted, strip_tabs in pending:
            lines = []
            while self.i < self.n:
                end = self.text.find("\n", self.i)
                end = self.n if end == -1 else end
                line = self.text[self.i : end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line.lstrip("\t") if strip_tabs else line)
            redirect.heredoc = "\n".join(lines) + ("\n" if lines else "")
            if not quoted:  # $(…) in an unquoted here-document runs
                redirect.heredoc_subs = (
                    _Parser(redirect.heredoc, self.home, self.vars, self.depth)._quoted_text().subs
                )

    def _arithmetic(self) -> list[Script]:
        """Skip ``(( … ))`` or the rest of ``$(( … ))``; return the substitutions inside."""
        subs: list[Script] = []
        level = 2
        while self.i < self.n and level:
            c = self.text[self.i]
            if c == "$" or c == "`":
                subs.extend(self._dollar_or_backtick(quoted=True).subs)
                continue
            level += (c == "(") - (c == ")")
            self.i += 1
        return subs

    # -- words ---------------------------------------------------------------------------------
    def _word(self) -> list[Word]:
        """Read one word at ``self.i``; returns the words it becomes after expansion."""
        parts: list[tuple[str, str]] = []  # (text, kind): lit, quoted, split, dyn
        subs: list[Script] = []
        start, text = self.i, self.text
        while self.i < self.n:
            c = text[self.i]
            if text.startswith(("<(", ">("), self.i):
                self.i += 2
                subs.append(self.parse_list(")"))
                parts.append(("$(…)", "dyn"))
            elif c in _WORD_END:
                break
            elif c == "\\":
                if text.startswith("\\\n", self.i):
                    self.i += 2
                else:
                    parts.append((text[self.i + 1 : self.i + 2], "quoted"))
                    self.i += 2
            elif c == "'":
                end = text.find("'", self.i + 1)
                if end == -1:
                    self.notes.append("an unclosed quote")
                    end = self.n
                parts.append((text[self.i + 1 : end], "quoted"))
                self.i = end + 1
            elif c == '"':
                self.i += 1
                inner = self._quoted_text('"')
                subs.extend(inner.subs)
                parts.append((inner.text, "dyn" if inner.dynamic else "quoted"))
            elif c == "$" and text.startswith("$'", self.i):
                self.i += 2
                parts.append((self._ansi_c(), "quoted"))
            elif c in "$`":
                piece = self._dollar_or_backtick(quoted=False)
                subs.extend(piece.subs)
                kind = "dyn" if piece.dynamic else ("lit" if piece.text == "$" else "split")
                parts.append((piece.text, kind))
            else:
                j = self.i
                while j < self.n and text[j] not in _WORD_END and text[j] not in "\\'\"$`":
                    j += 1
                parts.append((text[self.i : j], "lit"))
                self.i = j
        self.i = min(self.i, self.n)
        return finish_word(parts, subs, text[start : self.i], self.home)

    def _quoted_text(self, end: str | None = None) -> Word:
        """The inside of ``"…"`` up to ``end`` (or all of the text), with expansions."""
        out: list[str] = []
        subs: list[Script] = []
        dynamic = False
        while self.i < self.n:
            c = self.text[self.i]
            if c == end:
                self.i += 1
                break
            if c == "\\" and self.text[self.i + 1 : self.i + 2] in ("$", "`", '"', "\\", "\n"):
                out.append(self.text[self.i + 1].replace("\n", ""))
                self.i += 2
            elif c in "$`":
                piece = self._dollar_or_backtick(quoted=True)
                subs.extend(piece.subs)
                dynamic = dynamic or piece.dynamic
                out.append(piece.text)
            else:
                out.append(c)
                self.i += 1
        else:
            if end is not None:
                self.notes.append("an unclosed quote")
        return Word("".join(out), dynamic, False, subs)

    def _dollar_or_backtick(self, *, quoted: bool) -> Word:
        text, i = self.text, self.i
        if text[i] == "`":
            j, inner = i + 1, []
            while j < self.n and text[j] != "`":
                if text[j] == "\\" and text[j + 1 : j + 2] in ("`", "\\", "$"):
                    j += 1
                inner.append(text[j : j + 1])
                j += 1
            if j >= self.n:
                self.notes.append("an unclosed backtick")
            self.i = min(j + 1, self.n)
            return Word("$(…)", True, True, [self.nested("".join(inner))])
        if text.startswith("$((", i):
            self.i += 3
            return Word("$((…))", True, True, self._arithmetic())
        if text.startswith("$(", i):
            self.i += 2
            return Word("$(…)", True, True, [self.parse_list(")")])
        if text.startswith("${", i):
            return self._braced_parameter()
        if text.startswith('$"', i) and not quoted:
            self.i += 2
            return self._quoted_text('"')
        j = i + 1
        while j < self.n and text[j] in _NAME_CHARS and not (j == i + 2 and text[i + 1].isdigit()):
            j += 1
        if j == i + 1 and j < self.n and text[j] in _SPECIAL_PARAMS:
            j += 1
        name = text[i + 1 : j]
        self.i = j
        if not name:
            return Word("$")
        return self._lookup(name)

    def _braced_parameter(self) -> Word:
        start, level, subs = self.i, 1, []
        self.i += 2
        while self.i < self.n and level:
            c = self.text[self.i]
            if c == "\\":
                self.i += 2
            elif c == "`" or self.text.startswith("$(", self.i):
                subs.extend(self._dollar_or_backtick(quoted=True).subs)
            else:
                level += (c == "{") - (c == "}")
                self.i += 1
        if level:
            self.notes.append("an unclosed '${'")
        expression = self.text[start + 2 : self.i - (0 if level else 1)]
        if expression.isidentifier() and not subs:
            return self._lookup(expression)
        return Word("${" + expression + "}", True, True, subs)

    def _lookup(self, name: str) -> Word:
        if name in self.vars:
            value = self.vars[name]
        elif name == "HOME":
            value = self.home
        elif name == "PWD":
            value = "."
        elif name == "IFS":
            value = " "
        else:
            value = None
        if value is None:
            return Word("$" + name, True, True)
        return Word(value)

    def _ansi_c(self) -> str:
        """The value of ``$'…'`` from just after the opening quote."""
        value, self.i = decode_escapes(self.text, self.i, stop="'")
        if self.i >= self.n:
            self.notes.append("an unclosed quote")
        self.i += 1
        return value
