// contextfork inspector: expand/collapse, verified reveal of cold nodes, search, chart legend.
// Vanilla JS, no network: everything it needs is in the page (works from file://).
(function () {
  "use strict";

  // A large payload lives in its own script beside the page (works from file://, unlike fetch).
  function loadLazy(path, done) {
    var have = window.CF_LAZY && window.CF_LAZY[path];
    if (typeof have === "string") { done(have); return; }
    var tag = document.createElement("script");
    tag.src = path;
    tag.onload = function () {
      var v = window.CF_LAZY && window.CF_LAZY[path];
      done(typeof v === "string" ? v : null);
    };
    tag.onerror = function () { done(null); };
    document.head.appendChild(tag);
  }

  function toggleBlock(btn) {
    var pre = document.getElementById(btn.getAttribute("aria-controls"));
    if (pre.dataset.lazy) {
      var path = pre.dataset.lazy;
      btn.disabled = true; btn.textContent = "Loading…";
      loadLazy(path, function (text) {
        btn.disabled = false;
        if (text === null) { btn.textContent = "Could not load " + path + " (retry)"; return; }
        pre.textContent = text; delete pre.dataset.lazy;
        btn.setAttribute("aria-expanded", "false"); toggleBlock(btn);
      });
      return;
    }
    var open = btn.getAttribute("aria-expanded") === "true";
    pre.classList.toggle("collapsed", open);
    btn.setAttribute("aria-expanded", open ? "false" : "true");
    btn.textContent = open ? btn.dataset.closedLabel : "Collapse";
  }

  function b64bytes(b64) {
    var bin = atob(b64), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function hex(buf) {
    return Array.prototype.map.call(new Uint8Array(buf), function (b) {
      return ("0" + b.toString(16)).slice(-2);
    }).join("");
  }

  // Reveal the stored original and re-check its SHA-256 in the browser.
  function reveal(btn) {
    var box = btn.closest(".cold-node");
    var pre = document.getElementById(btn.getAttribute("aria-controls"));
    var status = box.querySelector(".check");
    var open = btn.getAttribute("aria-expanded") === "true";
    if (open) {
      pre.hidden = true; btn.setAttribute("aria-expanded", "false");
      btn.textContent = "Reveal the stored original"; return;
    }
    if (box.dataset.b64 === undefined && box.dataset.src) {
      btn.disabled = true; status.textContent = "loading the stored original…";
      loadLazy(box.dataset.src, function (b64) {
        btn.disabled = false;
        if (b64 === null) { status.textContent = "could not load " + box.dataset.src; status.className = "check bad"; return; }
        box.dataset.b64 = b64; status.textContent = ""; reveal(btn);
      });
      return;
    }
    var bytes = b64bytes(box.dataset.b64);
    pre.textContent = new TextDecoder("utf-8").decode(bytes);
    pre.hidden = false; btn.setAttribute("aria-expanded", "true"); btn.textContent = "Hide the original";
    if (!(window.crypto && crypto.subtle)) { status.textContent = "this browser cannot re-check SHA-256 here"; return; }
    crypto.subtle.digest("SHA-256", bytes).then(function (d) {
      var ok = hex(d) === box.dataset.sha256;
      status.textContent = ok ? "SHA-256 re-checked in your browser: matches" : "SHA-256 MISMATCH: these bytes are not what the node claims";
      status.className = "check " + (ok ? "ok" : "bad");
      box.dataset.browserCheck = ok ? "ok" : "mismatch";
    });
  }

  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!(t instanceof Element)) return;
    if (t.matches("button.toggle")) toggleBlock(t);
    else if (t.matches("button.reveal")) reveal(t);
  });

  document.querySelectorAll("button.toggle").forEach(function (b) { b.dataset.closedLabel = b.textContent; });

  document.querySelectorAll(".legend input[type=checkbox]").forEach(function (box) {
    box.addEventListener("change", function () {
      var chart = document.getElementById(box.dataset.chart);
      chart.querySelectorAll(".series").forEach(function (g) {
        if (g.dataset.series === box.dataset.series) g.style.display = box.checked ? "" : "none";
      });
    });
  });

  // Search: every page of the session (search.js), results link to the step.
  var input = document.getElementById("q"), results = document.getElementById("search-results");
  var index = null, loading = false;
  function loadIndex() {  // the index of every page is large: loaded on first use of the box
    if (index || loading) return;
    loading = true;
    var tag = document.createElement("script");
    tag.src = "search.js";
    tag.onload = function () { index = window.CF_SEARCH || []; loading = false; run(); };
    tag.onerror = function () { index = []; loading = false; results.textContent = "search.js could not be loaded"; results.classList.add("open"); };
    document.head.appendChild(tag);
  }
  function run() {
    if (!index) { loadIndex(); return; }
    var q = input.value.trim().toLowerCase();
    results.innerHTML = "";
    if (q.length < 2) { results.classList.remove("open"); return; }
    var hits = index.filter(function (it) { return it.t.indexOf(q) >= 0; }).slice(0, 50);
    hits.forEach(function (it) {
      var a = document.createElement("a");
      var at = it.t.indexOf(q);
      a.href = it.p + "#step-" + it.s;
      a.textContent = "Step " + it.s + ": …" + it.t.slice(Math.max(0, at - 40), at + q.length + 60).replace(/\s+/g, " ") + "…";
      results.appendChild(a);
    });
    if (!hits.length) { var none = document.createElement("div"); none.textContent = "No step mentions that."; none.className = "muted"; results.appendChild(none); }
    results.classList.add("open");
  }
  if (input) {
    input.addEventListener("focus", loadIndex);
    input.addEventListener("input", run);
    input.addEventListener("keydown", function (ev) {
      if (ev.key === "Escape") { input.value = ""; run(); }
      if (ev.key === "Enter") { var first = results.querySelector("a"); if (first) first.click(); }
    });
  }
})();
