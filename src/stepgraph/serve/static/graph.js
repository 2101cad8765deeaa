// The run page's step graph: pan (drag), zoom (wheel, buttons), fit, actual size, and a
// search box that finds a step by id or tool and brings it into view. The drawing is the
// server's layout (the one `stepgraph graph` draws); run.js colours the nodes as events
// arrive and opens a step in the inspector when a node is clicked.
"use strict";
(function () {
  const svg = document.getElementById("graph");
  if (!svg) return;
  const view = document.getElementById("graph-view");
  const width = Number(svg.dataset.width), height = Number(svg.dataset.height);
  const nodes = [...svg.querySelectorAll(".node")];
  const MIN = 0.04, MAX = 4, READABLE = 0.7;  // below READABLE a 14 px label is under 10 px
  let scale = 1, tx = 0, ty = 0;  // a graph point (x, y) is drawn at (x * scale + tx, ...)

  svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
  function apply() {
    const w = view.clientWidth, h = view.clientHeight;
    svg.setAttribute("viewBox", `${-tx / scale} ${-ty / scale} ${w / scale} ${h / scale}`);
    svg.dataset.scale = scale.toFixed(3);
  }
  function fitScale() {
    return Math.min(view.clientWidth / width, view.clientHeight / height, 1.5);
  }
  function fit() {
    scale = Math.max(MIN, fitScale());
    tx = (view.clientWidth - width * scale) / 2;
    ty = (view.clientHeight - height * scale) / 2;
    apply();
  }
  function zoomAt(factor, cx, cy) {
    const next = Math.min(MAX, Math.max(MIN, scale * factor));
    tx = cx - (cx - tx) * (next / scale);
    ty = cy - (cy - ty) * (next / scale);
    scale = next;
    apply();
  }
  function centre(node) {
    const [x, y] = node.getAttribute("transform").match(/-?[\d.]+/g).map(Number);
    const box = node.querySelector("rect");
    const cx = x + Number(box.getAttribute("width")) / 2;
    const cy = y + Number(box.getAttribute("height")) / 2;
    scale = Math.max(scale, 1);
    tx = view.clientWidth / 2 - cx * scale;
    ty = view.clientHeight / 2 - cy * scale;
    apply();
  }
  // A small graph is shown whole; a large one starts readable at its first column.
  function start() {
    if (fitScale() >= READABLE) { fit(); return; }
    scale = READABLE;
    const spots = nodes.map((n) => n.getAttribute("transform").match(/-?[\d.]+/g).map(Number));
    const left = Math.min(...spots.map(([x]) => x));
    const first = spots.filter(([x]) => x === left).map(([, y]) => y);
    const middle = (Math.min(...first) + Math.max(...first)) / 2;
    tx = 8 - left * scale;
    ty = view.clientHeight / 2 - middle * scale;
    apply();
  }

  view.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
  }, {passive: false});
  let drag = null, dragged = false;
  view.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = {x: ev.clientX, y: ev.clientY, tx, ty};
    dragged = false;
  });
  window.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (!dragged && Math.hypot(dx, dy) < 4) return;
    dragged = true;
    view.classList.add("dragging");
    tx = drag.tx + dx; ty = drag.ty + dy;
    apply();
  });
  window.addEventListener("pointerup", () => { drag = null; view.classList.remove("dragging"); });
  // A drag that ends on a node is a pan, not a click that opens the step.
  view.addEventListener("click", (ev) => {
    if (dragged) { ev.stopPropagation(); ev.preventDefault(); dragged = false; }
  }, true);
  for (const node of nodes) {
    node.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" || ev.key === " ") {
        ev.preventDefault();
        node.dispatchEvent(new MouseEvent("click", {bubbles: true}));
      }
    });
  }

  const button = (id, act) => {
    const b = document.getElementById(id);
    if (b) b.addEventListener("click", act);
  };
  const middle = () => [view.clientWidth / 2, view.clientHeight / 2];
  button("graph-fit", fit);
  button("graph-zoom-in", () => zoomAt(1.25, ...middle()));
  button("graph-zoom-out", () => zoomAt(0.8, ...middle()));
  button("graph-actual", () => {
    const [cx, cy] = middle();
    zoomAt(1 / scale, cx, cy);
  });

  // Search: every step whose id or tool holds the text is marked, the others fade; Enter
  // brings the next one into view and opens it in the inspector.
  const search = document.getElementById("graph-search");
  const found = document.getElementById("graph-found");
  let hits = [], next = 0;
  function mark() {
    const text = search.value.trim().toLowerCase();
    hits = [];
    for (const node of nodes) {
      const hit = text !== "" && (node.dataset.step.toLowerCase().includes(text)
        || (node.dataset.tool || "").toLowerCase().includes(text));
      if (hit) { node.setAttribute("data-match", ""); hits.push(node); } else node.removeAttribute("data-match");
    }
    // An exact id first: "s2" finds s2 before s20.
    hits.sort((a, b) => (b.dataset.step.toLowerCase() === text) - (a.dataset.step.toLowerCase() === text));
    svg.classList.toggle("searching", text !== "");
    found.textContent = text === "" ? "" : `${hits.length} found`;
    next = 0;
  }
  function show(node) {
    centre(node);
    node.dispatchEvent(new MouseEvent("click", {bubbles: true}));
    node.focus({preventScroll: true});
  }
  if (search) {
    search.addEventListener("input", mark);
    search.addEventListener("keydown", (ev) => {
      if (ev.key !== "Enter" || !hits.length) return;
      ev.preventDefault();
      show(hits[next % hits.length]);
      next += 1;
    });
  }
  window.addEventListener("resize", apply);
  window.stepgraphGraph = {fit, centre, show, view: () => ({scale, tx, ty})};
  start();
})();
