"""Plans and steps as frozen values, and plan files (JSON or YAML) read with clear errors.

    goal: Make check_calc.py pass
    mode: agentic                      # optional; teacher, planner or agentic (--mode wins)
    steps:
      - id: check                      # optional; "1", "2", ... otherwise
        description: Run the checker
        command: python3 check_calc.py
        explanation: Why this step matters (teacher mode shows it)   # optional
        timeout: 60                    # optional, seconds
        risk: moderate                 # optional; can raise the classifier's level, never lower it

A plan is never changed in place: the executor and the mutator build a new one, so every
``plan_revised`` event carries a consistent snapshot.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localhand.config.datafile import described, read_data
from localhand.errors import ConfigError
from localhand.safety.risk.classify import RiskLevel, classify
from localhand.safety.trust.store import use_named

StepStatus = Literal["pending", "done", "failed", "skipped"]
RISK_ORDER: dict[str, int] = {"safe": 0, "moderate": 1, "dangerous": 2}
MAX_PLAN_STEPS = 50
"""A longer plan is almost certainly a mistake (or a model rambling), not a plan."""


@dataclass(frozen=True, slots=True)
class Step:
    """One shell command with what it is for, and how it went so far."""

    id: str
    description: str
    command: str
    risk: RiskLevel = "safe"
    risk_reasons: tuple[str, ...] = ()
    explanation: str = ""
    """Why the step is there, in a sentence or two (shown in teacher mode)."""
    timeout_s: float | None = None
    """Seconds the command may run; None: the executor's default."""
    status: StepStatus = "pending"
    attempts: int = 0
    """Times the step was tried (a try refused at the approval gate counts)."""
    retries: int = 0
    """Corrections that ran this step again (``retry``, ``modify``): what the per-step
    breaker counts. A rerun after inserted repair steps is not one (seed 003)."""
    added: bool = False
    """Inserted by the model as a repair step."""
    modified: bool = False
    """Its command was changed by the model."""
    error: str | None = None
    """Why it last failed or was skipped."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["risk_reasons"] = list(self.risk_reasons)
        return data


@dataclass(frozen=True, slots=True)
class Plan:
    """A goal and its ordered steps. ``steps_added`` counts steps the model inserted."""

    goal: str
    steps: tuple[Step, ...]
    steps_added: int = 0
    revision: int = 0
    """Bumped by every change, so views can tell snapshots apart."""
    mode: str | None = None
    """The mode the plan file asks for (``--mode`` and ``run_plan(mode=...)`` win over it)."""

    def index_of(self, step_id: str) -> int:
        for index, step in enumerate(self.steps):
            if step.id == step_id:
                return index
        raise KeyError(f"no step with id {step_id!r} in the plan")

    def step(self, step_id: str) -> Step:
        return self.steps[self.index_of(step_id)]

    def with_step(self, step_id: str, **changes: Any) -> Plan:
        """A new plan where one step has ``changes`` (a status, a command...)."""
        index = self.index_of(step_id)
        steps = list(self.steps)
        steps[index] = replace(steps[index], **changes)
        return replace(self, steps=tuple(steps), revision=self.revision + 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "steps": [step.to_dict() for step in self.steps],
            "steps_added": self.steps_added,
            "revision": self.revision,
        }


def higher_risk(a: RiskLevel, b: RiskLevel) -> RiskLevel:
    return a if RISK_ORDER[a] >= RISK_ORDER[b] else b


def classified(step: Step, workspace: Path | None, floor: RiskLevel = "safe") -> Step:
    """``step`` with the classifier's verdict on its command; ``floor`` is a level declared
    by hand, which may make a step riskier than the classifier thinks, never safer."""
    risk = classify(step.command, workspace)
    level = higher_risk(risk.level, floor)
    reasons = risk.reasons if level == risk.level else (*risk.reasons, f"declared {floor}")
    return replace(step, risk=level, risk_reasons=tuple(reasons))


# -- plan files ----------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _StepSpec(_Strict):
    id: str | int | None = None
    description: str = Field(min_length=1)
    command: str = Field(min_length=1)
    explanation: str = ""
    timeout: float | None = Field(None, gt=0)
    risk: Literal["safe", "moderate", "dangerous"] = "safe"

    @field_validator("command")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value


class _PlanSpec(_Strict):
    goal: str = Field(min_length=1)
    mode: Literal["teacher", "planner", "agentic"] | None = None
    steps: list[_StepSpec] = Field(min_length=1, max_length=MAX_PLAN_STEPS)


_SECTIONS: dict[str, type[BaseModel]] = {"": _PlanSpec, "steps": _StepSpec}
"""The model of the plan and of its steps, for the fields allowed where an unknown one stands."""


def load_plan(path: str | Path, workspace: Path | None = None) -> Plan:
    """Read a plan file (``.json``, else YAML); ``ConfigError`` names the bad field. Its
    steps are commands: it is used as the user trusted it (``localhand.safety.trust.store``)."""
    path = Path(path)
    data = read_data(path, "plan file", lambda p: use_named(p, "plan file").text)
    try:
        return plan_from_data(data, workspace)
    except ConfigError as exc:
        raise ConfigError(f"plan file {path}: {exc}") from None


def plan_from_data(data: Any, workspace: Path | None = None) -> Plan:
    """Validate a plan given as data (from a file or a model's draft) and classify its steps."""
    if not isinstance(data, dict):
        raise ConfigError("a plan must be a mapping with 'goal' and 'steps'")
    try:
        spec = _PlanSpec.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n" + described(exc, _SECTIONS)) from None
    steps = []
    seen: set[str] = set()
    for number, item in enumerate(spec.steps, start=1):
        step_id = str(item.id).strip() if item.id is not None else str(number)
        if not step_id or step_id in seen:
            why = "is empty" if not step_id else f"repeats the id {step_id!r}"
            raise ConfigError(f"\n  steps.{number - 1}.id: {why}; step ids must be unique")
        seen.add(step_id)
        step = Step(
            step_id,
            item.description.strip(),
            item.command.strip(),
            explanation=item.explanation.strip(),
            timeout_s=item.timeout,
        )
        steps.append(classified(step, workspace, floor=item.risk))
    return Plan(spec.goal.strip(), tuple(steps), mode=spec.mode)
