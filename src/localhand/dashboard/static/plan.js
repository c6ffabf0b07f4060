// Plan view: folds plan-mode events into steps with statuses and banners.
// Plan events are rendered generically, so new fields never break the page: a step is keyed by
// the first of step_id / step / index / step_index / id, labelled by description / title /
// command / name; "repair": true (or kind "repair") marks a repair step.
"use strict";

const PLAN_TYPES = new Set([
  "step_started", "step_finished", "agent_thinking", "agent_stuck", "retry_attempt",
  "step_skipped", "budget_warning", "plan_revised", "approval_needed", "plan_cancelled",
]);

function pick(obj, keys) {
  for (const k of keys) if (obj && obj[k] !== undefined && obj[k] !== null) return obj[k];
  return undefined;
}

class PlanState {
  constructor() { this.steps = new Map(); this.thinking = null; this.banners = new Map(); this.seen = false; }

  step(src, position) {
    let key = pick(src, ["step_id", "step", "index", "step_index", "id"]);
    if (typeof key === "object") key = pick(key, ["id", "index"]);
    if (key === undefined) key = position !== undefined ? position : this.steps.size;
    key = String(key);
    if (!this.steps.has(key)) this.steps.set(key, { key, label: "", status: "pending", attempts: 0, repair: false, detail: "" });
    const s = this.steps.get(key);
    const label = pick(src, ["description", "title", "command", "name"]);
    if (label !== undefined && typeof label !== "object") s.label = shownInert(String(label));
    if (src.repair === true || src.kind === "repair" || src.is_repair === true) s.repair = true;
    if (src.status && typeof src.status === "string") s.status = src.status;
    return s;
  }

  apply(e) {
    if (!PLAN_TYPES.has(e.type)) return false;
    this.seen = true;
    if (e.type !== "agent_thinking") this.thinking = null;
    switch (e.type) {
      case "plan_revised": {
        const steps = Array.isArray(e.plan) ? e.plan : (e.plan && e.plan.steps) || [];
        const old = this.steps; this.steps = new Map();
        steps.forEach((raw, i) => {
          const src = typeof raw === "object" ? raw : { description: String(raw) };
          const before = old.get(String(pick(src, ["step_id", "step", "index", "id"]) ?? i));
          const s = this.step(src, i);
          if (before && !src.status) { s.status = before.status; s.attempts = before.attempts; }
        });
        break;
      }
      case "step_started": this.step(e).status = "running"; break;
      case "step_finished": {
        const s = this.step(e);
        if (!e.status) s.status = e.ok === false || e.success === false ? "failed" : "done";
        s.detail = String(pick(e, ["summary", "output_summary", "reason", "message"]) ?? "");
        break;
      }
      case "step_skipped": { const s = this.step(e); s.status = "skipped"; s.detail = String(e.reason ?? ""); break; }
      case "retry_attempt": {
        const s = this.step(e); s.status = "retrying";
        s.attempts = Number(pick(e, ["attempt", "attempts"]) ?? s.attempts + 1);
        s.detail = String(pick(e, ["reason", "message"]) ?? "");
        break;
      }
      case "agent_thinking": this.thinking = String(pick(e, ["message", "reason", "summary"]) ?? ""); break;
      case "approval_needed": {
        const s = this.step(e); s.status = "awaiting approval";
        this.banners.set("approval", "Approval needed: " + shownInert(String(pick(e, ["warning_message", "message"]) ?? "")));
        break;
      }
      case "agent_stuck": this.banners.set("stuck", "Agent is stuck: " + String(pick(e, ["reason", "message"]) ?? "")); break;
      case "budget_warning": this.banners.set("budget", "Budget: " + String(pick(e, ["message", "reason"]) ?? "")); break;
      case "plan_cancelled": this.banners.set("cancelled", "Plan cancelled: " + String(pick(e, ["reason", "message"]) ?? "")); break;
    }
    if (e.type !== "approval_needed" && e.type !== "agent_thinking") this.banners.delete("approval");
    return true;
  }

  render(root, stepsEl, bannersEl) {
    root.hidden = !this.seen;
    bannersEl.replaceChildren();
    if (this.thinking !== null) {
      bannersEl.append(el("div", "banner thinking", [el("span", "spinner"), "Agent is thinking… " + this.thinking]));
    }
    for (const [kind, text] of this.banners) bannersEl.append(el("div", "banner " + kind, [text]));
    stepsEl.replaceChildren(...[...this.steps.values()].map((s) => {
      const status = s.status.replace(/ /g, "_");
      const li = el("li", s.repair ? "repair" : "", [
        el("span", "pill " + ({ done: "pass", failed: "fail", running: "running" }[status] || status), [s.status]),
        el("span", "label", [s.label || "step " + s.key]),
        el("span", "detail", [(s.attempts ? `attempt ${s.attempts}` : "") + (s.detail ? " · " + s.detail : "")]),
      ]);
      li.dataset.step = s.key;
      return li;
    }));
  }
}

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
