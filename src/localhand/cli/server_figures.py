"""What the model server said it spent, in the live view's words: a turn's prefill, cache hit
and prefill rate (``server_figures_line``, with ``-v`` and in ``show``) and the run's totals
(``server_totals_line``, at the end of every run; a restore and drafts accepted too).
"unknown" where a server said nothing."""

from __future__ import annotations

from typing import Any


def server_figures_line(reply: dict[str, Any]) -> str:
    """A ``model_reply``'s server figures: tokens prefilled this turn, the cache hit %, prefill
    tokens/s, each "unknown" where the server did not say; "" when it said none of them."""
    prefilled, cached = reply.get("tokens_prefilled"), reply.get("tokens_cached")
    milliseconds = reply.get("prefill_ms")
    if prefilled is None and cached is None and not milliseconds:
        return ""
    total = (prefilled or 0) + (cached or 0)
    hit = f"{100 * cached / total:.0f}%" if cached is not None and total else "unknown"
    rate = "unknown"
    if prefilled and milliseconds:
        rate = f"{prefilled / milliseconds * 1000:,.0f} tok/s"
    amount = "unknown" if prefilled is None else f"{prefilled:,} tok"
    return f"prefill {amount} · cache hit {hit} · prefill rate {rate}"


def server_totals_line(prefill: dict[str, Any] | None) -> str:
    """The run's ``Result.prefill`` in one line: "" when no server said anything of it."""
    if not prefill or not prefill.get("reported"):
        return ""
    done, reused = prefill.get("tokens_prefilled"), prefill.get("tokens_reused")
    seconds = prefill.get("prefill_s")
    amount = "unknown" if done is None else f"{done:,} tok"
    hit = "unknown"
    if done is not None and reused is not None and done + reused:
        hit = f"{100 * reused / (done + reused):.0f}%"
    took = "" if seconds is None else f" in {seconds:.1f} s"
    line = (
        f"server: prefilled {amount}{took} · cache hit {hit} "
        f"({prefill['reported']} of {prefill.get('requests', '?')} replies said)"
    )
    if prefill.get("restored_tokens"):
        line += f" · {prefill['restored_tokens']:,} tok restored"
    if (accepted := prefill.get("draft_acceptance")) is not None:
        line += f" · drafts accepted {100 * accepted:.0f}% of {prefill['draft_tokens']:,}"
    return line
