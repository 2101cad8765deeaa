// The run list: start a run from a workspace task file or a goal.
"use strict";
document.getElementById("start-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const body = {};
  for (const key of ["task", "goal", "approval"]) if (form.get(key)) body[key] = form.get(key);
  try {
    const started = await postJSON("/api/runs", body);
    location.href = "/runs/" + started.run_id;
  } catch (error) {
    document.getElementById("start-error").textContent = error.message;
  }
});

// Statuses change while the list is open: look again every 2 s while a run is unfinished.
async function refreshStatuses() {
  const open = [...document.querySelectorAll("tr[data-run] .badge")]
    .filter((badge) => ["running", "awaiting_approval"].includes(badge.textContent));
  if (!open.length) return;
  const response = await fetch("/api/runs?limit=500");
  if (!response.ok) return;
  for (const run of await response.json()) {
    const badge = document.querySelector(`tr[data-run="${run.run_id}"] .badge`);
    if (badge && badge.textContent !== run.status) {
      badge.textContent = run.status;
      badge.className = "badge " + run.status;
      badge.closest("tr").children[3].textContent = run.answer || "";
    }
  }
}
setInterval(refreshStatuses, 2000);
