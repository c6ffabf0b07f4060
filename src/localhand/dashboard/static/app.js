// localhand dashboard: runs list and live run view. Plain JS, no build step.
// Live updates: one WebSocket per open run, resumed with ?after=<last seq> after a drop, so a
// late or reconnecting page gets every earlier event first and never one twice.
// A command waiting for approval (any approval_needed: the model's command, an MCP tool's call,
// a plan step) gets Approve / Deny buttons once GET /api/approvals lists it: only runs started
// from this page wait for its answer. Verify commands typed into the form are asked for the
// same way, before the task starts. Stop and the title's count of waiting approvals: control.js.
// The token is in an HttpOnly cookie (set when the printed URL was opened), so fetch and
// WebSocket carry it without this script ever seeing it.
"use strict";

const $ = (id) => document.getElementById(id);
let leave = () => {};

function route() {
  leave();
  const match = location.hash.match(/^#\/runs\/([\w-]+)/);
  leave = match ? showRun(match[1]) : showRuns();
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);

function mount(templateId) {
  $("app").replaceChildren($(templateId).content.cloneNode(true));
}

async function api(path, options) {
  const response = await fetch(path, options);
  const text = await response.text();
  let body;
  try { body = JSON.parse(text); } catch { body = { detail: text.trim() }; } // 401, 413: plain text
  if (!response.ok) throw new Error(errorText(body.detail) || `HTTP ${response.status}`);
  return body;
}

function errorText(detail) {
  if (Array.isArray(detail)) return detail.map((d) => `${(d.loc || []).slice(-1)[0]}: ${d.msg}`).join("; ");
  return detail;
}

function setConn(state, text) {
  const conn = $("conn");
  conn.hidden = !state;
  conn.className = "conn " + (state || "");
  conn.textContent = text || "";
}

// -- runs list -------------------------------------------------------------------------------
function showRuns() {
  mount("runs-view");
  setConn(null);
  const form = $("start-form");
  const saved = JSON.parse(localStorage.getItem("localhand.form") || "{}");
  api("/api/config").then((config) => {
    $("roots").textContent = `Workspaces must be inside ${config.roots.join(", ")}.`;
    form.workspace.value = saved.workspace || config.cwd;
    form.model.value = saved.model || config.model;
    form.verify.value = saved.verify || "";
  }).catch(() => {});
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const data = {
      description: form.description.value, workspace: form.workspace.value.trim(),
      model: form.model.value.trim() || null, tier: form.tier.value,
      agentic: { auto: null, agentic: true, simple: false }[form.mode.value] ?? null,
      verify: form.verify.value.trim() ? [form.verify.value.trim()] : [],
    };
    if (form.mode.value.startsWith("plan-")) data.mode = form.mode.value.slice(5);
    localStorage.setItem("localhand.form", JSON.stringify({ workspace: data.workspace, model: data.model, verify: form.verify.value }));
    form.querySelector("button").disabled = true;
    try {
      const { run_id } = await api("/api/runs", {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(data),
      });
      location.hash = `#/runs/${run_id}`;
    } catch (err) {
      $("start-error").hidden = false;
      $("start-error").textContent = err.message;
      form.querySelector("button").disabled = false;
    }
  });
  runRows.clear();
  const refresh = () => api("/api/runs?limit=100").then(({ runs, waiting }) => {
    renderRuns(runs);
    showWaitingInTitle(waiting); // control.js: the title says it as soon as the list does
  }).catch(() => {});
  refreshRuns = refresh;
  refresh();
  const timer = setInterval(refresh, 2000);
  return () => { clearInterval(timer); refreshRuns = () => {}; };
}
let refreshRuns = () => {};

// Each status counted apart: "unverified" (no check given, run or adopted) is never folded into "pass".
const STATUS_ORDER = ["waiting for you", "pass", "unverified", "partial_pass", "fail", "error", "interrupted", "running"];

function statusCounts(runs) {
  const counts = new Map();
  for (const r of runs) {
    const status = r.status === "running" && r.waiting > 0 ? "waiting for you" : r.status;
    counts.set(status, (counts.get(status) || 0) + 1);
  }
  const rank = (s) => (STATUS_ORDER.includes(s) ? STATUS_ORDER.indexOf(s) : STATUS_ORDER.length);
  return [...counts].sort((a, b) => rank(a[0]) - rank(b[0]))
    .map(([s, n]) => `${n} ${String(s).replace("_", " ")}`).join(" · ");
}

// Rows are kept while their run does not change (only the running duration is updated), so a
// Stop button is never swapped for another under the pointer.
const runRows = new Map();

function renderRuns(runs) {
  $("runs-empty").hidden = runs.length > 0;
  $("runs-counts").textContent = runs.length ? statusCounts(runs) : "";
  const rows = runs.map((r) => {
    const key = JSON.stringify([r.status, r.waiting, r.termination_reason, r.iterations,
      r.tokens_in + r.tokens_out, r.model, r.description, stops.get(r.id) ?? null]);
    let entry = runRows.get(r.id);
    if (!entry || entry.key !== key) { entry = { tr: runRow(r), key }; runRows.set(r.id, entry); }
    entry.tr.querySelector("td.duration").textContent = seconds(r.duration_s);
    return entry.tr;
  });
  const body = $("runs-body");
  if (rows.length !== body.children.length || rows.some((tr, i) => body.children[i] !== tr)) body.replaceChildren(...rows);
}

// A run waiting for an answer says so ("waiting for you", not "running"); a running one has
// Stop, and a stopped one says what the Stop did.
function runRow(r) {
  const waiting = r.status === "running" && r.waiting > 0;
  const status = waiting
    ? [el("span", "pill asks", ["waiting for you"]), " ", el("span", "meta", [plural(r.waiting, "approval")])]
    : [pill(r.status), " ", el("span", "meta", [r.termination_reason || ""])];
  if (r.status === "running" && !stops.has(r.id)) status.push(" ", stopButton(r.id, () => refreshRuns()));
  else if (stops.has(r.id)) status.push(" ", el("span", "stop-state", [stopOutcome(r.id, r)]));
  const tr = el("tr", waiting ? "asks" : "", [
    el("td", "mono", [r.id + (r.kind === "replay" ? " ↻" : "")]),
    el("td", "", [new Date(r.started_at * 1000).toLocaleString()]),
    el("td", "status", status),
    el("td", "", [clip(r.description, 90)]),
    el("td", "mono", [r.model]),
    el("td", "num", [String(r.iterations)]),
    el("td", "num", [String(r.tokens_in + r.tokens_out)]),
    el("td", "num duration", [seconds(r.duration_s)]),
  ]);
  tr.dataset.run = r.id;
  tr.addEventListener("click", () => { location.hash = `#/runs/${r.id}`; });
  return tr;
}

// -- one run ---------------------------------------------------------------------------------
function showRun(runId) {
  mount("run-view");
  const view = new RunView(runId);
  // The stream may end the run before this answer arrives: a run that fails at once is over
  // before its page has loaded. Then the stream's run is the newer word and this one is stale.
  api(`/api/runs/${runId}?events=false`).then(({ run }) => { if (!view.ended) view.setRun(run); }).catch((err) => {
    $("run-title").textContent = err.message;
  });
  view.connect();
  view.refreshApprovals();
  return () => view.close();
}

class RunView {
  constructor(runId) {
    this.runId = runId; this.lastSeq = 0; this.ended = false; this.closed = false;
    this.start = null; this.tools = 0; this.iteration = 0; this.tokensIn = 0; this.tokensOut = 0;
    this.plan = new PlanState(); this.ws = null; this.run = null;
    this.approvals = []; this.approvalTimer = null; this.fetchingApprovals = false;
  }

  connect() {
    if (this.closed || this.ended) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const ws = new WebSocket(`${scheme}://${location.host}/ws/runs/${this.runId}?after=${this.lastSeq}`);
    this.ws = ws;
    ws.onopen = () => setConn("live", "live");
    ws.onmessage = (msg) => this.receive(JSON.parse(msg.data));
    ws.onclose = (ev) => {
      if (this.closed || this.ended) return;
      if (ev.code === 4404) { setConn(null); $("run-title").textContent = "No such run"; return; }
      setConn("retry", "reconnecting…");
      setTimeout(() => this.connect(), 1000);
    };
  }

  close() { this.closed = true; clearTimeout(this.approvalTimer); if (this.ws) this.ws.close(); }

  receive(e) {
    if (e.type === "stream_end") {
      this.ended = true; setConn(null, ""); this.setRun(e.run); this.waiting(null);
      this.settleApprovals(); return;
    }
    if (e.seq <= this.lastSeq) return; // already shown
    this.lastSeq = e.seq;
    this.apply(e);
  }

  setRun(run) {
    this.run = run;
    this.showStop(run);
    if (!this.start) this.start = run.started_at;
    $("run-title").textContent = run.description || "(no description)";
    $("run-meta").textContent = [
      `run ${run.id}`, run.kind === "replay" ? `replay of ${run.replay_of}` : null,
      run.continues ? `${run.kind === "helper" ? "helper of" : "continues"} ${run.continues}` : null, run.model,
      run.workspace, new Date(run.started_at * 1000).toLocaleString(),
    ].filter(Boolean).join(" · ");
    this.setStatus(run.status);
    if (run.status !== "running") {
      $("stat-duration").textContent = seconds(run.duration_s);
      if (run.status === "interrupted") $("stat-reason").textContent = "process ended";
    }
  }

  // Stop while the run is running; once it is over, what the Stop did.
  showStop(run) {
    const running = run.status === "running" && !this.ended;
    if (running && !this.stopShown && !stops.has(this.runId)) {
      this.stopShown = true;
      // The run may be over before the server's answer is (a run waiting for an approval
      // stops at once): then say how it ended, not that a stop was requested.
      const button = stopButton(this.runId, (text) => {
        if (this.ended) this.showStop(this.run); else $("run-stop-state").textContent = text;
      });
      button.id = "run-stop";
      $("run-stop").replaceWith(button);
    }
    const button = $("run-stop");
    button.hidden = !running && !stops.has(this.runId);
    if (stops.has(this.runId)) { // pressed here, or before this view was opened again
      button.disabled = true;
      if (running) button.textContent = "Stop requested";
      else button.textContent = run.termination_reason === "cancelled" ? "Stopped" : "Not stopped";
    }
    $("run-stop-state").textContent = stopOutcome(this.runId, run) || "";
  }

  setStatus(status) {
    const node = $("run-status");
    node.className = "pill " + status;
    node.textContent = status.replace("_", " ");
  }

  apply(e) {
    if (e.type === "task_started") this.start = e.ts;
    if (this.plan.apply(e)) this.plan.render($("plan"), $("plan-steps"), $("plan-banners"), $("plan-summary"));
    const row = this.row(e);
    if (row) { row.dataset.seq = e.seq; row.dataset.type = e.type; $("timeline-body").append(row); }
    if (e.type === "model_request") this.waiting(`Waiting for the model (iteration ${e.iteration})…`);
    if (e.type === "model_reply") {
      this.waiting(null);
      this.tokensIn += e.tokens_in || 0; this.tokensOut += e.tokens_out || 0;
      this.iteration = Math.max(this.iteration, e.iteration || 0);
    }
    if (e.type === "tool_call") this.tools += 1;
    if (e.type === "approval_needed") {
      const what = (e.step_id || "").startsWith("mcp:") ? "an MCP tool's call" : "a command";
      this.waiting(`Waiting for approval of ${what}…`); this.refreshApprovals();
    }
    if (e.type === "approval_decided") { this.waiting(null); this.decided(e); }
    if (e.type === "answer_delta") this.delta(e);
    if (e.type === "task_finished") this.finish(e.result || {});
    $("stat-iter").textContent = String(this.iteration);
    $("stat-tools").textContent = String(this.tools);
    $("stat-tokens").textContent = `${this.tokensIn} / ${this.tokensOut}`;
    if (!this.ended && this.start && e.type !== "task_finished") $("stat-duration").textContent = seconds(e.ts - this.start);
  }

  // The simple path streams its answer: it grows in the Result card as it arrives, and the
  // Result's output replaces it when the run ends. Thinking only shows as a waiting note.
  delta(e) {
    if (e.thinking) { this.waiting("The model is thinking…"); return; }
    this.waiting(null);
    $("result").hidden = false;
    $("result-output").textContent += e.text;
  }

  waiting(text) {
    $("waiting").hidden = !text;
    $("waiting-text").textContent = text || "";
  }

  row(e) {
    const when = this.start ? `+${(e.ts - this.start).toFixed(1)} s` : "";
    if (e.type === "approval_needed") return this.approvalRow(e, when);
    const words = this.plan.seen ? this.plan.words(e) : null; // plan.js: a plan event in words
    if (words) return note(e.type === "task_finished" ? "finished" : "plan", e, when, ...words);
    switch (e.type) {
      case "tool_call": {
        const tr = el("tr", "tool-row " + (e.ok ? "ok" : "failed"), [
          el("td", "num", [String(e.iteration)]), el("td", "when", [when]),
          el("td", "", [el("span", "tool", [e.tool_name])]),
          titled(el("td", "args", [e.args_summary]), e.args_summary),
          titled(el("td", "res", [e.result_summary]), e.result_summary),
          el("td", "num", [`${e.duration_ms} ms`]),
          el("td", "", [el("span", e.ok ? "mark-ok" : "mark-bad", [e.ok ? "✓ ok" : "✗ error"])]),
        ]);
        return tr;
      }
      case "task_started":
        return note("started", e, when, "start", `model ${e.model}, up to ${e.max_iterations} iterations`);
      case "model_reply": {
        const text = (e.content || "").trim();
        if (!text && !e.thinking) return null;
        const parts = [text ? clip(text, 300) : "(thinking only)"];
        if (e.thinking) parts.push(el("details", "", [el("summary", "", ["thinking"]), el("pre", "", [e.thinking])]));
        return note("model", e, when, "model", ...parts);
      }
      case "nudge": return note("nudge", e, when, `nudge ${e.nudge_number}`, e.message);
      case "guardrail": return note("guardrail", e, when, `stopped · ${e.guardrail}`, e.reason);
      case "warning": return note("warning", e, when, "warning", e.message);
      case "verification": {
        const ok = (e.checks || []).every((c) => c.passed);
        const text = (e.checks || []).map(checkLine).join("   ");
        return note("verification " + (ok ? "passed" : "failed"), e, when, "verify", text);
      }
      case "task_finished": {
        const r = e.result || {};
        const why = r.termination_reason || "finished";
        const text = r.iterations_used ? `${why} after ${plural(r.iterations_used, "iteration")}` : why;
        return note("finished", e, when, r.status || "finished", r.error ? `${text}: ${r.error}` : text);
      }
      case "approval_decided": {
        const outcome = e.approved ? "approved" : "denied";
        const said = e.reason ? ` · "${inert(e.reason)}"` : "";
        return note("decision " + outcome, e, when, outcome, `${e.command} · by ${e.by}${said}`);
      }
      case "hook_ran": { // the user's own command; its output is the workspace's, so text only
        const ended = e.blocked ? "blocked the call" : e.timed_out ? "timed out"
          : `exit ${e.exit_code === null ? "?" : e.exit_code}`;
        const state = e.blocked ? "blocked" : e.timed_out || e.exit_code !== 0 ? "failed" : "ok";
        const parts = [el("code", "", [inert(e.command || "", true)]), ` → ${ended} (${e.duration_ms} ms)`];
        if (e.output_summary) parts.push(el("div", "hook-output", [inert(e.output_summary)]));
        return note("hook " + state, e, when, `hook ${e.hook}`, ...parts);
      }
      case "model_request": case "answer_delta": return null;
      case "model_status": return note("status", e, when, "model", e.message || "");
      case "delegate_started": { // the helper's own run, a click away
        const link = Object.assign(el("a", "", [`helper run ${e.helper_run}`]), { href: `#/runs/${e.helper_run}` });
        return note("other", e, when, "delegate", clip(e.task, 300), ...(e.helper_run ? [" · ", link] : []));
      }
      case "delegate_finished":
        return note("other", e, when, "delegate", `helper ${e.termination_reason} after ${plural(e.iterations, "iteration")}, ${e.tokens_in}+${e.tokens_out} tokens`);
      default: {
        const { type, task_id, ts, seq, run_id, ...rest } = e;
        const text = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(" ");
        return note(PLAN_TYPES.has(type) ? "plan" : "other", e, when, type.replace(/_/g, " "), clip(text, 300));
      }
    }
  }

  // -- approvals: every text below is model output or derived from it, so it only ever goes
  // into text nodes (el), never into HTML, and is shown inert: a bidi override or a control
  // character could otherwise show another command than the one approved.
  approvalRow(e, when) {
    const reasons = (e.reasons || []).map(inert);
    const actions = el("div", "approval-actions", [el("span", "approval-state", ["waiting for an answer…"])]);
    const row = note("approval pending", e, when, "approval",
      el("code", "approval-command", [inert(e.command || "", true)]),
      el("div", "approval-why", [el("span", "pill " + (e.risk || ""), [inert(e.risk || "approval")]),
        " ", reasons.length ? reasons.map((r) => "it " + r).join("; ") : "asked by the approval policy"]),
      actions);
    this.approvals.push({ row, actions, command: e.command, decided: false, requestId: null });
    return row;
  }

  async refreshApprovals() {
    clearTimeout(this.approvalTimer);
    if (this.fetchingApprovals || this.closed) return;
    this.fetchingApprovals = true;
    try {
      const { approvals } = await api(`/api/approvals?run=${encodeURIComponent(this.runId)}`);
      for (const request of approvals) this.offer(request);
    } catch (err) { /* shown as still waiting; the next event or poll tries again */ }
    this.fetchingApprovals = false;
    // approval_needed is announced just before the request is registered: look again soon.
    if (!this.closed && !this.ended && this.approvals.some((a) => !a.decided && !a.requestId)) {
      this.approvalTimer = setTimeout(() => this.refreshApprovals(), 700);
    }
  }

  offer(request) {
    if (this.approvals.some((a) => a.requestId === request.id)) return;
    const entry = this.approvals.find((a) => !a.decided && !a.requestId && a.command === request.command);
    if (!entry) return;
    entry.requestId = request.id;
    const approve = el("button", "approve", ["Approve"]);
    const deny = el("button", "deny", ["Deny"]);
    // Why not, in the user's words: sent with a denial, the model reads it in the refusal.
    const reason = Object.assign(el("input", "deny-reason", []), {
      type: "text", maxLength: 500, placeholder: "reason for a no (optional)",
    });
    reason.setAttribute("aria-label", "reason for denying");
    const state = el("span", "approval-state", []);
    const answer = async (yes) => {
      approve.disabled = deny.disabled = reason.disabled = true;
      const body = yes ? { approve: true } : { approve: false, reason: reason.value };
      try {
        await api(`/api/approvals/${encodeURIComponent(request.id)}`, {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
        });
        state.textContent = yes ? "approved, waiting for the run…" : "denied, waiting for the run…";
      } catch (err) {
        state.textContent = err.message;
      }
      approve.remove(); deny.remove(); reason.remove();
    };
    approve.addEventListener("click", () => answer(true));
    deny.addEventListener("click", () => answer(false));
    reason.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && reason.value.trim()) answer(false); });
    entry.actions.replaceChildren(approve, deny, reason, state);
  }

  decided(e) {
    const entry = this.approvals.find((a) => !a.decided && a.command === e.command);
    if (!entry) return;
    entry.decided = true;
    const outcome = e.approved ? "approved" : "denied";
    entry.row.className = "note approval " + outcome;
    const said = e.reason ? `: "${inert(e.reason)}"` : "";
    entry.actions.replaceChildren(el("span", "approval-state", [`${outcome} (${e.by})${said}`]));
  }

  settleApprovals() {
    for (const entry of this.approvals.filter((a) => !a.decided)) {
      entry.decided = true;
      entry.row.className = "note approval";
      entry.actions.replaceChildren(el("span", "approval-state", ["no answer recorded"]));
    }
  }

  finish(r) {
    this.waiting(null);
    if (r.tokens_in !== undefined) { this.tokensIn = r.tokens_in; this.tokensOut = r.tokens_out; }
    if (r.iterations_used !== undefined) this.iteration = r.iterations_used;
    this.setStatus(r.status || "error");
    $("stat-reason").textContent = r.termination_reason || "–";
    if (r.duration_s !== undefined) $("stat-duration").textContent = seconds(r.duration_s);
    const fields = [
      ["Status", pill(r.status || "error")], ["Stopped by", r.termination_reason],
      ["Model", r.model_used], ["Files modified", (r.files_modified || []).join(", ") || "none"],
      ["Verification", (r.verification || []).map(checkLine).join("   ") || "no checks"],
    ];
    if (Array.isArray(r.steps)) {
      const done = r.steps.filter((st) => st.status === "done").length;
      fields.push(["Plan", `${r.mode ? r.mode + " mode, " : ""}${done} of ${plural(r.steps.length, "step")} done`]);
    }
    const server = serverTotals(r.prefill);
    if (server) fields.push(["Server", server]);
    if (r.status === "unverified") fields.push(["Not verified", unverifiedText(r.suggested_check)]);
    if (r.error) fields.push(["Error", r.error]);
    $("result-fields").replaceChildren(...fields.flatMap(([k, v]) => [el("dt", "", [k]), el("dd", "", [v ?? ""])]));
    $("result-output").textContent = r.output || "";
    $("result").hidden = false;
    showChange(this.runId); // diff.js: the files changed, their diff, the undo command
  }
}

// -- helpers ---------------------------------------------------------------------------------
// Control and invisible formatting characters (C0/C1 controls, bidi overrides and isolates,
// zero-width characters, line separators) written out as \x1b / \u202e, as the terminal's
// approval prompt (safety/approval.py escape) shows them; newlines kept where asked.
const INVISIBLE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
function inert(text, keepNewlines = false) {
  return String(text).replace(INVISIBLE, (c) => {
    if (keepNewlines && c === "\n") return c;
    const code = c.charCodeAt(0);
    return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
  });
}

function note(kind, e, when, tag, ...content) {
  return el("tr", "note " + kind, [
    el("td", "num", [e.iteration !== undefined ? String(e.iteration) : ""]), el("td", "when", [when]),
    el("td", "", [el("span", "tag", [tag])]),
    Object.assign(el("td", "text", content), { colSpan: 4 }),
  ]);
}

function titled(node, title) { node.title = title || ""; return node; }
function unverifiedText(suggested) {
  const text = "no check was given, run or adopted, so only the model says the work is done";
  return suggested ? `${text}; \`${suggested}\` would check it (verify "auto" runs it)` : `${text}; give a verify command to check it`;
}

// What the model server said of its prompt processing over the run (the Result's prefill), in
// the words of the terminal's closing line (cli/server_figures.py); "" when no server said.
function serverTotals(prefill) {
  if (!prefill || !prefill.reported) return "";
  const done = prefill.tokens_prefilled, reused = prefill.tokens_reused;
  const amount = done == null ? "unknown" : `${done.toLocaleString("en")} tok`;
  const took = prefill.prefill_s == null ? "" : ` in ${prefill.prefill_s.toFixed(1)} s`;
  const hit = done != null && reused != null && done + reused ? `${Math.round(100 * reused / (done + reused))}%` : "unknown";
  return `prefilled ${amount}${took} · cache hit ${hit} (${prefill.reported} of ${prefill.requests} replies said)`;
}

function pill(status) { return el("span", "pill " + status, [String(status).replace("_", " ")]); }
// A check as a line: its mark, its command, and what its verdict rests on (docs/results.md).
function checkLine(c) {
  const t = c.tests;
  let said = "";
  if (c.evidence === "report" && t) {
    said = `report: ${t.passed} passed, ${t.failed} failed`;
    if (t.skipped) said += `, ${t.skipped} skipped`;
    if ((t.missing || []).length) said += `, ${t.missing.length} missing of ${t.collected_before}`;
  } else if (c.evidence === "exit_code") said = "exit code only";
  return `${c.passed ? "✓" : "✗"} ${c.name}${said ? ` (${said})` : ""}`;
}
function clip(text, n) { text = String(text ?? ""); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
function seconds(s) {
  if (s === undefined || s === null) return "–";
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}
