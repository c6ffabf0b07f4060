// Staying in control from a page left open: the tab's title counts the approvals waiting for
// the user, on every view and without a reload ("(1) localhand"), and Stop asks a running run
// to end (POST /api/runs/ID/cancel). A run started in a terminal stops too: the server leaves
// it a cancel request that it checks; it ends "cancelled" with what it did so far recorded.
"use strict";

const BASE_TITLE = "localhand";
const TITLE_POLL_MS = 2000;

function showWaitingInTitle(total) {
  document.title = total > 0 ? `(${total}) ${BASE_TITLE}` : BASE_TITLE;
}

async function refreshTitle() {
  try {
    const { total } = await api("/api/waiting");
    showWaitingInTitle(total);
  } catch (err) { /* the server is away: keep the last count until it answers again */ }
}
window.addEventListener("DOMContentLoaded", () => {
  refreshTitle();
  setInterval(refreshTitle, TITLE_POLL_MS);
});

// What each Stop has said so far, by run id: the runs list is redrawn as runs change, and the
// run view is left and opened again, and both keep saying what happened.
const stops = new Map();

async function requestStop(runId) {
  stops.set(runId, "stopping…");
  try {
    await api(`/api/runs/${encodeURIComponent(runId)}/cancel`, { method: "POST" });
    stops.set(runId, "stop requested: the run ends at its next check…");
  } catch (err) {
    stops.set(runId, err.message); // 409: it was no longer running
  }
  return stops.get(runId);
}

// Once the run is over: what the Stop did, in words (null if nobody pressed Stop here).
function stopOutcome(runId, run) {
  if (!stops.has(runId) || !run || run.status === "running") return stops.get(runId) ?? null;
  const status = String(run.status).replace("_", " ");
  const text = run.termination_reason === "cancelled"
    ? `stopped: the run ended cancelled (${status}), with what it did so far recorded`
    : `the run ended (${status}, ${run.termination_reason || "no reason"}) before the stop reached it`;
  stops.set(runId, text);
  return text;
}

// A Stop button for a running run; `said` is called with what the server answered (after the
// button's own text, so that it may say more).
function stopButton(runId, said) {
  const button = el("button", "stop", ["■ Stop"]);
  button.type = "button";
  button.title = "Cancel this run: it stops at its next check and keeps what it did so far";
  button.addEventListener("click", async (ev) => {
    ev.stopPropagation(); // a click in a runs-list row would open the run
    button.disabled = true;
    button.textContent = "Stopping…";
    const text = await requestStop(runId);
    button.textContent = text.startsWith("stop requested") ? "Stop requested" : "Not stopped";
    said(text);
  });
  return button;
}
