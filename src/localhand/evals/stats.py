"""The few statistics an eval report needs: a rate with its confidence interval, the interval
of the difference between two rates, and medians.

Why Wilson: with the handful of runs a local eval can afford (30 tasks, 1-5 repeats), rates
sit near 0 or 1 and the textbook normal interval ``p ± z·sqrt(p(1-p)/n)`` collapses to a
point there (0 of 5 would read "0% ± 0%"). Wilson's score interval stays inside [0, 1] and
keeps a sensible width at the edges. The difference of two rates (``--compare``) uses
Newcombe's hybrid score interval, built from the two Wilson intervals, for the same reason.

Every run counts as one trial. Runs of the same task are not independent (a task a model
cannot do fails every repeat), so the interval is somewhat narrower than the truth when tasks
differ a lot in difficulty; the report shows each task's own count beside it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``k`` successes in ``n`` trials, with a 95% Wilson interval ``[low, high]``."""

    k: int
    n: int
    rate: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | int]:
        return _rounded(self)


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """``k`` of ``n`` as a rate with its Wilson score interval. ``n == 0``: rate 0 in [0, 1]
    (nothing was measured, so nothing is excluded)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, not k={k}, n={n}")
    if n == 0:
        return Rate(0, 0, 0.0, 0.0, 1.0)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At k == 0 or k == n the formula gives the edge up to rounding: make it exact.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k, n, p, low, high)


@dataclass(frozen=True, slots=True)
class Difference:
    """``b.rate - a.rate`` with Newcombe's 95% interval; ``significant`` when the interval
    leaves out zero."""

    diff: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, float | bool]:
        return {**_rounded(self), "significant": self.significant}


def _rounded(record: Rate | Difference) -> dict[str, Any]:
    """A record's fields, its floats to four places (as the report keeps its figures)."""
    return {key: round(v, 4) if isinstance(v, float) else v for key, v in asdict(record).items()}


def difference(a: Rate, b: Rate) -> Difference:
    """How far ``b`` moved from ``a`` (Newcombe 1998, method 10: hybrid score)."""
    d = b.rate - a.rate
    low = d - math.sqrt((b.rate - b.low) ** 2 + (a.high - a.rate) ** 2)
    high = d + math.sqrt((b.high - b.rate) ** 2 + (a.rate - a.low) ** 2)
    return Difference(d, max(-1.0, low), min(1.0, high))


def median(values: Iterable[float | int | None]) -> float | None:
    """The median of the values that are not None, rounded as the report keeps figures (to
    the millisecond, for seconds); None when there are none."""
    present = [float(v) for v in values if v is not None]
    return round(statistics.median(present), 4) if present else None
