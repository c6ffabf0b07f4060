"""The public ``localhand.Agent``: the tool loop (``localhand.run.agent.ToolLoop``) whose runs
end as every door's do (``localhand.session.finish``): checked, graded and announced."""

from __future__ import annotations

from localhand.run.agent import ToolLoop
from localhand.session.finish import finish
from localhand.types import Result


class Agent(ToolLoop):
    """Runs one task in one workspace with one model (``AgentConfig``'s fields as keywords).

    ``bus`` receives every event; ``checks`` grade the workspace when the run ends."""

    def run(self, task: str) -> Result:
        """Run ``task`` to its announced Result (``task_finished``)."""
        return finish(self.play(task))


__all__ = ["Agent"]
