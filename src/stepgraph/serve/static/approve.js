// The approval page: approve, reject, edit or revise; every decision names who made it.
"use strict";
const runId = document.body.dataset.run;
const byInput = document.getElementById("by");
if (byInput) byInput.value = localStorage.getItem("stepgraph-name") || "";
for (const button of document.querySelectorAll("#decide button[data-action]")) {
  button.addEventListener("click", async () => {
    const action = button.dataset.action;
    const error = document.getElementById("decide-error");
    error.textContent = "";
    const by = byInput.value.trim();
    if (!by) { error.textContent = "Give your name: it is recorded with the decision."; return; }
    localStorage.setItem("stepgraph-name", by);
    // The decision names what this page showed: a plan changed since is not decided.
    const body = {by, approval_hash: document.getElementById("decide").dataset.approvalHash};
    try {
      if (action === "edit") body.plan = JSON.parse(document.getElementById("plan-json").value);
      if (action === "revise") body.comment = document.getElementById("comment").value;
      await postJSON(`/api/runs/${runId}/${action}`, body);
      // An edit or a revision parks again: come back here to see the new plan and its diff.
      location.href = (action === "edit" || action === "revise")
        ? `/runs/${runId}/approve` : `/runs/${runId}`;
    } catch (e) {
      error.textContent = e.message;
    }
  });
}
