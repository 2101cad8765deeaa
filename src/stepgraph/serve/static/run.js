// The run page, live: every journal event arrives by server-sent events and updates the
// graph colours, the timeline, the inspector and the answer.
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
  return [...names].filter((id) => document.getElementById("node-" + id) || steps[id]);
}
function stepOf(id) { return steps[id] || (steps[id] = {events: [], state: "pending"}); }

function setState(id, state) {
  stepOf(id).state = state;
  const node = document.getElementById("node-" + id);
  if (node) node.setAttribute("class", "node " + state);
}

function setStatus(status) {
  const badge = document.getElementById("status");
  badge.textContent = status;
  badge.className = "badge " + status;
  document.getElementById("approve-link").hidden = status !== "awaiting_approval";
}

function fmt(value) {
  if (value && typeof value === "object" && "$quantity" in value) {
    const [m, u] = value.$quantity; return `${+Number(m).toPrecision(12)} ${u}`;
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

function handle(e) {
  const ts = Date.parse(e.ts);
  if (firstTs === null) firstTs = ts;
  if (e.step) stepOf(e.step).events.push(e);
  switch (e.event) {
    case "run.start": case "run.resume": setStatus("running"); break;
    case "plan.awaiting": setStatus("awaiting_approval"); break;
    case "plan.approved":
      setStatus("running");
      // A repaired run approved other plans before the one drawn: reloading for those
      // reloaded the page forever. Only a later approval of another plan redraws it.
      if (e.seq > drawnAt && e.plan_hash !== planHash) location.reload();
      break;
    case "plan.rejected": setStatus("not_run"); break;
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
      // A passing unit check saw a dimension, not a number: it never makes a step green
      // (the rule of stepgraph.journal.fold_states, which the pictures use too).
      if (e.passed && e.kind === "unit") break;
      for (const id of covered(e)) {
        const now = stepOf(id).state;
        if (now === "unchecked" || now === "verified") {
          setState(id, e.passed ? "verified" : "check_failed");
        }
      }
      break;
    case "answer": document.getElementById("answer").textContent = e.text; break;
    case "run.end": setStatus(e.status); showResult(); break;
  }
  const item = el("li", {}, `${e.seq} ${e.event}${e.step ? " " + e.step : ""}`);
  document.getElementById("events").append(item);
  drawGantt();
  if (selected && e.step === selected) inspect(selected);
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
    if (e.event === "check") parts.push(el("p", {class: e.passed ? "verdict pass" : "verdict fail"},
      `${e.passed ? "pass" : "FAIL"} ${e.kind}: ${e.description}`));
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
  for (const node of document.querySelectorAll(".node")) node.classList.toggle("selected", node.dataset.step === id);
}

async function showResult() {
  const response = await fetch(`/api/runs/${runId}`);
  if (!response.ok) return;
  const result = await response.json();
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

for (const node of document.querySelectorAll(".node")) {
  node.addEventListener("click", () => inspect(node.dataset.step));
}
// A large journal is summarised by the server (the nodes carry each step's state):
// follow only what is written after the part it read.
const after = document.body.dataset.after;
for (const node of document.querySelectorAll(".node")) {
  stepOf(node.dataset.step).state = node.getAttribute("class").split(" ")[1];
}
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
