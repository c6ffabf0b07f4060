"""A sandbox with more bubblewrap binds laid over the one in force: the check guard's files
from before the run, the test reporters and their report folder (``localhand.evidence``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from localhand.safety.box.sandbox import Sandbox


@dataclasses.dataclass(frozen=True, slots=True)
class Bound(Sandbox):
    """``inner`` (its settings copied, so the Result reports it alike) with ``binds``, each
    ``(option, source, target)`` such as ``("--ro-bind", kept, path)``, after every other
    mount, so they show over what it shows. Binds over binds compose."""

    inner: Sandbox | None = None
    binds: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def over(cls, box: Sandbox, binds: Iterable[tuple[str, str, str]]) -> Bound:
        fields = {f.name: getattr(box, f.name) for f in dataclasses.fields(Sandbox)}
        return cls(**fields, inner=box, binds=tuple(binds))

    def wrap(self, argv: Sequence[str], *args: Any, **kwargs: Any) -> list[str]:
        options = (self.inner or Sandbox()).wrap(argv, *args, **kwargs)
        at = options.index("--chdir")  # the options end with --chdir DIR -- ARGV
        return [*options[:at], *(part for bind in self.binds for part in bind), *options[at:]]
