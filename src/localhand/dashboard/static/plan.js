// Plan view: the plan as a step list (each step's status and attempts, the repair steps the
// model inserted, the steps still to come, the plan's mode), and each plan event told in words
// for the timeline under it. Everything is folded from the recorded events (plan/events.py):
// plan_started, plan_revised and a plan's Result carry the whole plan, step_* one step.
// Commands and descriptions are the model's or the plan file's: they only go into text nodes,
// shown inert (app.js's inert), never into HTML.
"use strict";

const PLAN_TYPES = new Set([
  "plan_started", "plan_revised", "step_started", "step_finished", "step_skipped",
  "retry_attempt", "agent_thinking", "agent_stuck", "budget_warning", "plan_cancelled",
]);
const STEP_PILL = {
  done: "pass", failed: "fail", running: "running", retrying: "running", skipped: "skipped",
  pending: "pending", "awaiting approval": "asks", "not approved": "fail",
};

class PlanState {
  constructor() {
    this.steps = new Map(); this.mode = ""; this.thinking = null; this.banners = new Map();
    this.seen = false; this.inserted = []; this.changed = [];
  }

  // Is this event the plan's? Approvals of a plan step and a plan's Result are too.
  owns(e) {
    if (PLAN_TYPES.has(e.type)) return true;
    if (e.type === "approval_needed" || e.type === "approval_decided") return this.steps.has(String(e.step_id));
    // A plan that never ran (its draft failed, its start was refused) ends as any run does:
    // its Result's row says why; there is no step list to show.
    const steps = (e.result || {}).steps;
    return e.type === "task_finished" && Array.isArray(steps) && (this.seen || steps.length > 0);
  }

  step(id) {
    const key = String(id ?? "?");
    if (!this.steps.has(key)) this.steps.set(key, newStep(key));
    return this.steps.get(key);
  }

  number(id) {
    const at = [...this.steps.keys()].indexOf(String(id));
    return at < 0 ? "?" : String(at + 1);
  }

  // A whole plan (plan_started, plan_revised, a plan Result's steps): its order and what it
  // says of each step win; the steps it newly brings are remembered for the timeline's words.
  load(steps) {
    const old = this.steps;
    this.steps = new Map(); this.inserted = []; this.changed = [];
    for (const raw of steps || []) {
      const id = String(raw.id);
      const before = old.get(id);
      const s = { ...newStep(id), ...(before || {}) };
      Object.assign(s, {
        description: shownInert(String(raw.description ?? s.description ?? "")),
        command: shownInert(String(raw.command ?? s.command ?? "")),
        status: String(raw.status || s.status || "pending"),
        attempts: Number(raw.attempts ?? s.attempts ?? 0),
        added: raw.added === true, modified: raw.modified === true,
        detail: raw.error ? shownInert(String(raw.error)) : (raw.status === "done" ? "" : s.detail || ""),
      });
      this.steps.set(id, s);
      if (!before && old.size && s.added) this.inserted.push(s);
      if (before && before.command !== s.command) this.changed.push(s);
    }
  }

  apply(e) {
    if (!this.owns(e)) return false;
    this.seen = true;
    if (e.type !== "agent_thinking") this.thinking = null;
    switch (e.type) {
      case "plan_started": this.mode = String(e.mode || ""); this.load((e.plan || {}).steps); break;
      case "plan_revised": this.load((e.plan || {}).steps); break;
      case "step_started": {
        const s = this.step(e.step_id);
        Object.assign(s, { status: "running", attempts: Number(e.attempt || s.attempts + 1), detail: "" });
        if (e.description) s.description = shownInert(String(e.description));
        if (e.command) s.command = shownInert(String(e.command));
        break;
      }
      case "step_finished": {
        const s = this.step(e.step_id);
        s.status = e.status === "done" ? "done" : "failed";
        s.attempts = Number(e.attempt || s.attempts);
        s.detail = s.status === "done" ? "" : shownInert(failure(e));
        break;
      }
      case "step_skipped": Object.assign(this.step(e.step_id), { status: "skipped", detail: shownInert(String(e.reason ?? "")) }); break;
      case "retry_attempt": Object.assign(this.step(e.step_id), { status: "retrying", detail: shownInert(String(e.reason ?? "")) }); break;
      case "agent_thinking":
        this.thinking = `the model is diagnosing step ${this.number(e.step_id)} (correction ${Number(e.corrections_used || 0) + 1})`;
        break;
      case "approval_needed":
        this.step(e.step_id).status = "awaiting approval";
        this.banners.set("approval", "Approval needed: " + shownInert(String(e.warning_message ?? "")));
        break;
      case "approval_decided":
        this.step(e.step_id).status = e.approved ? "running" : "not approved";
        break;
      case "agent_stuck": this.banners.set("stuck", "The model is stuck: " + shownInert(String(e.reason ?? ""))); break;
      case "budget_warning": this.banners.set("budget", "Budget: " + shownInert(String(e.message ?? ""))); break;
      case "plan_cancelled": this.banners.set("cancelled", "Plan stopped: " + shownInert(String(e.reason ?? ""))); break;
      case "task_finished": {
        const r = e.result || {};
        this.load(r.steps); this.inserted = []; this.changed = [];
        if (r.mode) this.mode = String(r.mode);
        break;
      }
    }
    if (e.type !== "approval_needed") this.banners.delete("approval");
    return true;
  }

  summary() {
    const steps = [...this.steps.values()];
    const count = (status) => steps.filter((s) => s.status === status).length;
    const parts = [this.mode ? `${this.mode} mode` : "", plural(steps.length, "step")];
    const states = ["done", "failed", "skipped", "pending"].filter(count).map((st) => `${count(st)} ${st}`);
    if (states.length) parts.push(states.join(", "));
    const added = steps.filter((s) => s.added).length;
    if (added) parts.push(`${plural(added, "repair step")} inserted by the model`);
    return parts.filter(Boolean).join(" · ");
  }

  render(root, stepsEl, bannersEl, summaryEl) {
    root.hidden = !this.seen;
    summaryEl.textContent = this.summary();
    bannersEl.replaceChildren();
    if (this.thinking !== null) bannersEl.append(el("div", "banner thinking", [el("span", "spinner"), this.thinking + "…"]));
    for (const [kind, text] of this.banners) bannersEl.append(el("div", "banner " + kind, [text]));
    stepsEl.replaceChildren(...[...this.steps.values()].map((s) => {
      const tags = [];
      if (s.added) tags.push(el("span", "tag added", ["repair step, inserted by the model"]));
      if (s.modified) tags.push(el("span", "tag modified", ["command changed by the model"]));
      const li = el("li", "step " + s.status.replace(/ /g, "-") + (s.added ? " added" : ""), [
        el("span", "pill " + (STEP_PILL[s.status] || s.status), [s.status]),
        el("span", "label", [s.description || "step " + s.id]), ...tags,
        el("span", "attempts", [s.attempts ? plural(s.attempts, "attempt") : "not run yet"]),
        el("code", "command", ["$ " + s.command]),
        el("span", "detail", [s.detail]),
      ]);
      li.dataset.step = s.id;
      return li;
    }));
  }

  // The timeline's words for a plan event (after it was applied), or null.
  words(e) {
    const n = `step ${e.index !== undefined ? e.index + 1 : this.number(e.step_id)}`;
    const cmd = (c) => "$ " + shownInert(String(c ?? ""));
    const why = (text) => (text ? `: ${shownInert(String(text))}` : "");
    switch (e.type) {
      case "plan_started":
        return ["plan", `the plan starts in ${e.mode || "its"} mode with ${plural(this.steps.size, "step")}`];
      case "step_started":
        return [n, `started${e.attempt > 1 ? ` (attempt ${e.attempt})` : ""}: ${shownInert(String(e.description || ""))} (${cmd(e.command)})`];
      case "step_finished":
        if (e.status === "done") return [n, `done in ${(Number(e.duration_ms || 0) / 1000).toFixed(1)} s`];
        return [n, e.refused ? `not run${why(e.refused)}` : `failed (${failure(e)})`];
      case "step_skipped": return [n, `skipped${why(e.reason)}`];
      case "agent_thinking": return ["model", this.thinking || "the model is diagnosing the failure"];
      case "retry_attempt":
        return [n, `retry ${e.retry} of ${e.max_retries}${e.new_command ? ` as ${cmd(e.command)}` : ""}${why(e.reason)}`];
      case "plan_revised": {
        if (e.action === "insert_steps" && this.inserted.length) {
          const what = this.inserted.map((s) => s.command ? `${s.description} (${cmd(s.command)})` : s.description).join("; ");
          return ["plan", `the model inserted ${this.inserted.length === 1 ? "a repair step" : plural(this.inserted.length, "repair step")}: ${what}${why(e.reason)}`];
        }
        if (this.changed.length) {
          const what = this.changed.map((s) => `step ${this.number(s.id)} now runs ${s.command ? "$ " + s.command : ""}`).join("; ");
          return ["plan", `the model changed the plan: ${what}${why(e.reason)}`];
        }
        return ["plan", `the model revised the plan (${shownInert(String(e.action || "change"))})${why(e.reason)}`];
      }
      case "agent_stuck": return [n, `the model is stuck after ${plural(Number(e.attempts || 0), "attempt")}${why(e.reason)}`];
      case "budget_warning": return ["budget", shownInert(String(e.message ?? ""))];
      case "plan_cancelled": return ["plan", `the plan stopped (${shownInert(String(e.termination_reason || ""))})${why(e.reason)}`];
      case "approval_needed": return [n, `needs approval${why(e.warning_message)}`];
      case "task_finished": {
        const r = e.result || {};
        const steps = r.steps || [];
        const done = steps.filter((s) => s.status === "done").length;
        const parts = [`${done} of ${plural(steps.length, "step")} done`];
        const skipped = steps.filter((s) => s.status === "skipped").length;
        if (skipped) parts.push(`${skipped} skipped`);
        if (r.steps_added) parts.push(`${plural(r.steps_added, "repair step")} inserted by the model`);
        const error = r.error ? ` (${shownInert(String(r.error))})` : "";
        return [r.status || "finished", `${r.termination_reason || "finished"}: ${parts.join(", ")}${error}`];
      }
      default: return null;
    }
  }
}

function newStep(id) {
  return { id, description: "", command: "", status: "pending", attempts: 0, added: false, modified: false, detail: "" };
}

// Why a step failed, in words: "exit 1", "timed out", plus the last line it printed.
function failure(e) {
  if (e.refused) return String(e.refused);
  const why = e.stopped ? "stopped" : e.timed_out ? "timed out" : `exit ${e.exit_code ?? "?"}`;
  const lines = String(e.output_tail || "").split("\n").filter((l) => l.trim());
  return lines.length ? `${why}: ${lines[lines.length - 1].slice(0, 200)}` : why;
}

function plural(n, noun) { return `${n} ${noun}${n === 1 ? "" : "s"}`; }

function el(tag, cls, children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const c of children || []) node.append(c);
  return node;
}

// A step's command and an approval's reasons are the model's: shown inert (app.js's inert,
// loaded after this file), so no control character or bidi override changes what is read.
function shownInert(text) {
  return typeof inert === "function" ? inert(text) : text;
}
