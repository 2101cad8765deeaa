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
