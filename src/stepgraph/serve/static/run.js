// The run page's step graph: the drawn nodes, their colours and the selected one.
// The panels around it (status, answer, inspector, timeline, events) are in panels.js,
// which tells the graph what changed and is told which node was picked.
"use strict";
const graph = {
  // Called with a step id when a node is picked (panels.js opens the inspector).
  onPick: null,
  has(id) { return document.getElementById("node-" + id) !== null; },
  setState(id, state) {
    const node = document.getElementById("node-" + id);
    if (node) node.setAttribute("class", "node " + state);
  },
  select(id) {
    for (const node of document.querySelectorAll(".node")) {
      node.classList.toggle("selected", node.dataset.step === id);
    }
  },
  // Each drawn step's state as the server drew it (a large journal's nodes carry theirs).
  drawnStates() {
    const states = {};
    for (const node of document.querySelectorAll(".node")) {
      states[node.dataset.step] = node.getAttribute("class").split(" ")[1];
    }
    return states;
  },
};
for (const node of document.querySelectorAll(".node")) {
  node.addEventListener("click", () => { if (graph.onPick) graph.onPick(node.dataset.step); });
}
