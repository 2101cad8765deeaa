// The run page, live: every journal event arrives by server-sent events and updates the
// status, the graph's colours (through `graph`, run.js), the timeline, the inspector and
// the answer.
"use strict";
const runId = document.body.dataset.run;
const planHash = document.body.dataset.planHash;
// The journal's last event when the page was drawn: the stream replays the run from its
// start, and only a plan approved after that can be one the page did not draw.
const drawnAt = Number(document.body.dataset.seq || 0);
const steps = {};          // step id -> {events: [], start, end, state}
let selected = null;
let firstTs = null;

// The steps a verdict looked at: its own step, or those its check expression names
// (the same rule as stepgraph.verifiers.covered).
function covered(e) {
  if (e.step) return [e.step];
  if (e.kind !== "check") return [];
  const names = new Set();
  for (const key of Object.keys(e.values || {})) {
    for (const match of key.matchAll(/\$\{\s*([A-Za-z_][A-Za-z0-9_]*)/g)) names.add(match[1]);
  }
  names.delete("inputs");
  return [...names].filter((id) => graph.has(id) || steps[id]);
}
function stepOf(id) { return steps[id] || (steps[id] = {events: [], state: "pending"}); }

function setState(id, state) {
  stepOf(id).state = state;
  graph.setState(id, state);
}

function setStatus(status) {
  const badge = document.getElementById("status");
  badge.textContent = status;
  badge.className = "badge " + status;
  document.getElementById("approve-link").hidden = status !== "awaiting_approval";
  document.getElementById("cancel-button").hidden = status !== "running";
}

function fmt(value) {
  if (value && typeof value === "object" && "$quantity" in value) {
    // pint writes "MB / s"; people (and the CLI) write MB/s.
    const [m, u] = value.$quantity; return `${+Number(m).toPrecision(12)} ${u.replace(/ \/ /g, "/")}`;
  }
  if (value && typeof value === "object" && "$expression" in value) {  // references bound
    const bound = Object.entries(value.bindings || {}).map(([k, v]) => `${k} = ${fmt(v)}`);
    return value.$expression + (bound.length ? `  (where ${bound.join(", ")})` : "");
  }
  if (value && typeof value === "object" && ("$float" in value || "$int" in value)) {
    return String(value.$float || value.$int);
  }
  return typeof value === "string" ? value : JSON.stringify(value);
}

// Times as people read them: the clock (local), and how long after the run's first event.
function clock(ts) {
  const d = new Date(ts);
  if (isNaN(d)) return ts || "";
  return d.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false});
}
function since(ts) {
  const t = Date.parse(ts);
  if (isNaN(t) || firstTs === null) return "";
  const s = (t - firstTs) / 1000;
  return s < 60 ? `+${s.toFixed(3)} s` : `+${Math.floor(s / 60)} min ${(s % 60).toFixed(1)} s`;
}
function cut(text, n) { text = String(text == null ? "" : text); return text.length > n ? text.slice(0, n - 1) + "…" : text; }
function tokens(usage) {
  if (!usage) return "";
  const p = usage.prompt_tokens ?? usage.input_tokens, c = usage.completion_tokens ?? usage.output_tokens;
  return p === undefined && c === undefined ? "" : `${p ?? 0} prompt + ${c ?? 0} completion tokens`;
}
// What an event says, in one line of the events list.
function summary(e) {
  switch (e.event) {
    case "run.start": return `task ${e.task}: ${cut(e.goal, 120)}`;
    case "llm.request": return `${e.purpose}, attempt ${e.attempt}: ${e.model}, ${(e.messages || []).length} messages`;
    case "llm.response": return [`${e.purpose}, attempt ${e.attempt}`, tokens(e.usage), `${Math.round(e.latency_ms)} ms`, e.mode].filter(Boolean).join(" · ");
    case "llm.reused": return `${e.purpose}, attempt ${e.attempt}: attempt ${e.asked_attempt}'s answer again, sent before word for word; no model asked`;
    case "plan.proposed": return `${(e.plan.steps || []).length} steps from ${e.source}${e.purpose ? " (" + e.purpose + ")" : ""}`;
    case "plan.invalid": return cut((e.problems || []).join("; "), 200);
    case "plan.approved": case "plan.rejected": return `by ${e.who} (${e.how})`;
    case "plan.awaiting": return "waiting for a decision";
    case "plan.repair": return `round ${e.round}: ${cut((e.failures || []).join("; "), 160)}`;
    case "thought": return cut(e.text, 160);
    case "action": return cut(`${e.tool}(${Object.entries(e.args || {}).map(([k, v]) => `${k}=${fmt(v)}`).join(", ")})`, 160);
    case "observation": return `${e.ok ? cut(fmt(e.value), 120) : "error: " + cut(e.error, 120)} · ${e.duration_ms} ms${e.attempt > 1 ? " · attempt " + e.attempt : ""}`;
    case "step.reused": return "reused: " + cut(fmt(e.value), 120);
    case "step.skipped": return cut(e.reason, 160);
    case "check": return `${e.passed ? "pass" : "FAIL"} ${e.kind}: ${cut(e.description, 160)}`;
    case "answer": return cut(e.text, 160);
    case "run.cancelled": return `by ${e.who} (${e.how}), before the next ${e.before} call`;
    case "run.end": return `${e.status} after ${(e.duration_ms / 1000).toFixed(2)} s${e.reason ? ": " + cut(e.reason, 120) : ""}`;
    default: return "";
  }
}

// Each model call, request and answer, folded: opened, it shows the prompt and the answer.
const calls = [];
function modelCall(e) {
  if (e.event === "llm.request") { calls.push({request: e, response: null}); return; }
  const open = [...calls].reverse().find((c) => !c.response && c.request.purpose === e.purpose
    && c.request.attempt === e.attempt);
  if (open) open.response = e; else calls.push({request: null, response: e});
}
function drawCalls() {
  const box = document.getElementById("model-calls");
  if (!calls.length) return;
  box.replaceChildren(...calls.map((c, i) => {
    const q = c.request || {}, r = c.response;
    const head = [`#${i + 1} ${q.purpose || r.purpose}`, `attempt ${q.attempt || r.attempt}`,
      q.model || (r && r.model) || ""];
    if (r) head.push(tokens(r.usage), `${Math.round(r.latency_ms)} ms`, `mode ${r.mode}`,
      r.retries ? `${r.retries} retries` : "");
    else head.push("waiting for the answer");
    const body = [];
    for (const m of q.messages || []) body.push(el("div", {class: "role"}, m.role), el("pre", {}, m.content));
    if (r) body.push(el("div", {class: "role"}, "answer"), el("pre", {class: "answer-text"}, r.text));
    return el("details", {class: "call", "data-purpose": q.purpose || r.purpose},
      el("summary", {}, head.filter(Boolean).join(" · ")), ...body);
  }));
}

// Who decided about the plans, and whether the run was cancelled.
const large = document.body.dataset.after !== undefined;
const decided = [];
function drawDecisions() {
  const box = document.getElementById("decisions");
  const items = decided.map((e) => {
    const kind = e.event === "run.cancelled" ? "cancelled" : e.event.split(".")[1];
    return el("span", {class: "decision " + kind}, `${kind} by `, el("strong", {}, e.who),
      ` (${e.how}) `, el("time", {datetime: e.when || e.ts, title: e.ts}, clock(e.when || e.ts)));
  });
  if (!large) box.replaceChildren();  // a large journal's earlier ones are the server's
  items.forEach((item, i) => { if (i || box.childNodes.length) box.append("; "); box.append(item); });
}

function drawVerification(rounds) {
  const box = document.getElementById("verification");
  const said = document.getElementById("verification-summary");
  if (!rounds || !rounds.length) return;
  const last = rounds[rounds.length - 1];
  said.className = last.failed ? "error" : "";
  said.textContent = `${last.passed} passed, ${last.failed} failed` +
    (rounds.length > 1 ? ` in the last of ${rounds.length} checked rounds (the earlier ones sent the plan back for repair)` : "");
  box.replaceChildren(...rounds.slice().reverse().map((round) => {
    const rows = round.verdicts.map((v) => {
      const values = el("dl", {});
      for (const [name, shown] of v.values) values.append(el("dt", {}, name), el("dd", {}, shown));
      const row = el("tr", {class: v.passed ? "pass" : "fail", "data-kind": v.kind},
        el("td", {class: "outcome"}, v.passed ? "pass" : "FAIL"),
        el("td", {}, v.step ? el("a", {href: "#node-" + v.step, "data-step": v.step}, v.step) : "plan"),
        el("td", {}, v.label + (v.tolerance ? ` (±${v.tolerance})` : "")),
        el("td", {}, v.description), el("td", {}, values));
      const link = row.querySelector("a[data-step]");
      if (link) link.addEventListener("click", (ev) => { ev.preventDefault(); inspect(v.step); });
      return row;
    });
    const table = el("table", {class: "plan"},
      el("caption", {}, rounds.length === 1 ? `${round.passed} passed, ${round.failed} failed`
        : `Round ${round.round}${round.last ? " (final)" : ""}: ${round.passed} passed, ${round.failed} failed`),
      el("thead", {}, el("tr", {}, ...["", "step", "kind", "what was compared", "values"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows));
    const section = el("div", {class: "round" + (round.last ? " last" : ""), "data-round": round.round}, table);
    if (round.last) return section;
    const folded = el("details", {}, el("summary", {}, `Round ${round.round}: ${round.failed} failed (repaired)`), section);
    return folded;
  }));
}

// Drawn a few times a second at most: a run of thousands of steps replays its events in
// a burst, and redrawing the timeline for each one made the page wait seconds.
let pendingRows = document.createDocumentFragment();
let frame = null;
const REDRAW_MS = 100;
function redraw() {
  frame = null;
  document.querySelector("#events tbody").append(pendingRows);
  pendingRows = document.createDocumentFragment();
  drawGantt();
  drawCalls();
  if (selected) inspect(selected);
}
function later() { if (frame === null) frame = setTimeout(redraw, REDRAW_MS); }

function handle(e) {
  const ts = Date.parse(e.ts);
  if (firstTs === null) firstTs = ts;
  if (e.step) stepOf(e.step).events.push(e);
  switch (e.event) {
    case "run.start": case "run.resume": setStatus("running"); break;
    case "plan.awaiting": setStatus("awaiting_approval"); refreshResult(); break;
    case "llm.request": case "llm.response": modelCall(e); break;
    case "run.cancelled": decided.push(e); drawDecisions(); break;
    case "plan.approved":
      setStatus("running");
      decided.push(e); drawDecisions();
      // A repaired run approved other plans before the one drawn: reloading for those
      // reloaded the page forever. Only a later approval of another plan redraws it.
      if (e.seq > drawnAt && e.plan_hash !== planHash) location.reload();
      break;
    case "plan.rejected": setStatus("not_run"); decided.push(e); drawDecisions(); break;
    case "action": {
      const s = stepOf(e.step);
      if (s.start === undefined) s.start = ts;
      setState(e.step, "running"); break;
    }
    case "observation":
      stepOf(e.step).end = ts;
      stepOf(e.step).took = e.duration_ms;  // the call's own time, as the CLI prints it
      // Green only once a verdict checked the value: until then it ran, unchecked.
      if (e.final) setState(e.step, e.ok ? "unchecked" : "failed");
      break;
    case "step.reused": setState(e.step, "unchecked"); break;
    case "step.skipped": setState(e.step, "skipped"); break;
    case "check":
      // As stepgraph.verifiers.step_states: a unit check can fail a value, never verify it.
      for (const id of covered(e)) {
        const now = stepOf(id).state;
        if (now !== "unchecked" && now !== "verified") continue;
        if (!e.passed) setState(id, "check_failed");
        else if (e.kind !== "unit") setState(id, "verified");
      }
      break;
    case "answer": document.getElementById("answer").textContent = e.text; break;
    case "run.end": setStatus(e.status); showResult(); break;
  }
  pendingRows.append(el("tr", {"data-seq": e.seq, "data-event": e.event},
    el("td", {}, String(e.seq)),
    el("td", {title: e.ts}, el("time", {datetime: e.ts}, clock(e.ts)), " ", el("span", {class: "muted"}, since(e.ts))),
    el("td", {}, e.event), el("td", {}, e.step || ""), el("td", {class: "what"}, summary(e))));
  if (e.event === "run.end") {  // the last one: drawn with the status, not a moment after
    clearTimeout(frame);
    redraw();
  } else {
    later();
  }
}

function drawGantt() {
  const ran = Object.entries(steps).filter(([, s]) => s.start !== undefined);
  const box = document.getElementById("gantt");
  if (!ran.length) return;
  const now = Date.now();
  const t0 = Math.min(...ran.map(([, s]) => s.start));
  const t1 = Math.max(...ran.map(([, s]) => s.end !== undefined ? s.end : now), t0 + 1);
  box.replaceChildren();
  for (const [id, s] of ran.sort((a, b) => a[1].start - b[1].start)) {
    const end = s.end !== undefined ? s.end : now;
    // A bar is the call: it ends at its observation and lasts its duration_ms (the time
    // from the action to the call's start is waiting for a thread, not the step's time).
    const took = s.took !== undefined ? s.took : end - s.start;
    const bar = el("div", {class: "bar " + s.state, title: `${id}: ${took.toFixed(1)} ms`});
    bar.style.left = (100 * Math.max(0, end - took - t0) / (t1 - t0)) + "%";
    bar.style.width = Math.max(0.3, 100 * took / (t1 - t0)) + "%";
    const row = el("div", {class: "lane", "data-step": id},
      el("span", {class: "label"}, id), el("div", {class: "track"}, bar),
      el("span", {class: "ms"}, `${took.toFixed(1)} ms`));
    row.addEventListener("click", () => inspect(id));
    box.append(row);
  }
}

function inspect(id) {
  selected = id;
  const s = stepOf(id);
  const box = document.getElementById("inspector");
  const parts = [el("h2", {}, "Step "), el("p", {}, `state: ${s.state}`)];
  parts[0].append(el("code", {id: "inspected"}, id));
  for (const e of s.events) {
    if (e.event === "thought") parts.push(el("p", {class: "thought"}, "Thought: " + e.text));
    if (e.event === "action") parts.push(el("p", {class: "action"},
      `Action (attempt ${e.attempt}): ${e.tool}(${Object.entries(e.args).map(([k, v]) => `${k}=${fmt(v)}`).join(", ")})`));
    if (e.event === "observation") parts.push(el("p", {class: e.ok ? "observation" : "observation error"},
      `Observation (attempt ${e.attempt}, ${e.duration_ms} ms): ${e.ok ? fmt(e.value) : e.error}`));
    if (e.event === "step.reused") parts.push(el("p", {}, "Reused: " + fmt(e.value)));
    if (e.event === "step.skipped") parts.push(el("p", {}, "Skipped: " + e.reason));
    if (e.event === "check") {
      const values = Object.entries(e.values || {}).map(([k, v]) => `${k} = ${v}`).join(", ");
      parts.push(el("p", {class: e.passed ? "verdict pass" : "verdict fail"},
        `${e.passed ? "pass" : "FAIL"} ${e.kind}: ${e.description}${values ? ` (${values})` : ""}`));
    }
  }
  const fork = el("button", {type: "button", id: "fork-button"}, `Fork from ${id}`);
  fork.addEventListener("click", async () => {
    try {
      const made = await postJSON(`/api/runs/${runId}/fork`, {step: id});
      location.href = "/runs/" + made.run_id;
    } catch (error) { alert(error.message); }
  });
  parts.push(fork);
  box.replaceChildren(...parts);
  graph.select(id);
}

// The server's word on the run: its verdicts, and each step's state by the rule every
// face uses (stepgraph.engine.recorded_step_states), which the page's own guess gives way to.
async function refreshResult() {
  const response = await fetch(`/api/runs/${runId}`);
  if (!response.ok) return null;
  const result = await response.json();
  drawVerification(result.verification);
  for (const [id, state] of Object.entries(result.steps || {})) setState(id, state);
  return result;
}

async function showResult() {
  const result = await refreshResult();
  if (!result) return;
  const box = document.getElementById("answer");
  if (!result.answer) { box.textContent = `no answer (the run ended ${result.status})`; return; }
  box.replaceChildren(...result.answer_parts.map((part) => {
    if (!part.step) return part.text;
    const link = el("a", {href: "#node-" + part.step, class: "number", "data-step": part.step,
      title: "from step " + part.step}, part.text);
    link.addEventListener("click", (ev) => { ev.preventDefault(); inspect(part.step); });
    return link;
  }));
}

graph.onPick = inspect;
// A large journal is summarised by the server (the nodes carry each step's state):
// follow only what is written after the part it read.
const after = document.body.dataset.after;
for (const [id, state] of Object.entries(graph.drawnStates())) stepOf(id).state = state;
const source = new EventSource(after === undefined ? `/api/runs/${runId}/events`
  : `/api/runs/${runId}/events?after=${after}&offset=${document.body.dataset.offset}`);
// When each event reached the page (journal seq, its time, arrival): for measuring latency.
window.stepgraphArrivals = [];
source.onmessage = (message) => {
  const event = JSON.parse(message.data);
  window.stepgraphArrivals.push({seq: event.seq, event: event.event, ts: event.ts, at: Date.now()});
  handle(event);
};
// The stream ends with the run, or says why it stopped short: the journal was replaced,
// cut shorter or removed while followed, or no process writes the run any more.
source.addEventListener("end", (message) => {
  source.close();
  const why = JSON.parse(message.data || "{}");
  if (!why.reason) return;
  if (why.reason === "interrupted") {
    setStatus("interrupted");
    if (document.getElementById("way-on")) return;  // the page says how it goes on already
  }
  const notice = document.getElementById("stream-end");
  notice.textContent = why.message;
  notice.hidden = false;
});
const continueButton = document.getElementById("continue-button");
if (continueButton) {
  continueButton.addEventListener("click", async () => {
    try {
      await postJSON(`/api/runs/${runId}/continue`, {});
      location.reload();
    } catch (error) { alert(error.message); }
  });
}

// A focused node opens the inspector with Enter or Space, as a click does.
document.addEventListener("keydown", (ev) => {
  const node = ev.target.closest && ev.target.closest(".node");
  if (!node || (ev.key !== "Enter" && ev.key !== " ")) return;
  ev.preventDefault();  // Space would scroll the page
  inspect(node.dataset.step);
});

document.getElementById("cancel-button").addEventListener("click", async () => {
  const by = (prompt("Cancel the run: your name (recorded with the cancellation)",
    localStorage.getItem("stepgraph-name") || "") || "").trim();
  if (!by) return;
  localStorage.setItem("stepgraph-name", by);
  try {
    await postJSON(`/api/runs/${runId}/cancel`, {by});
    document.getElementById("cancel-button").disabled = true;
  } catch (error) { alert(error.message); }
});
if (large) refreshResult();  // a large journal's verdicts are not replayed event by event
