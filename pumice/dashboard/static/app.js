// pumice dashboard glue: uPlot charts fed from /series.json (redrawn on each sampler tick the
// event stream announces) and the Pod log viewer (an EventSource on /pods/<ns>/<name>/log).
(function () {
  "use strict";
  var charts = [];
  var palette = ["#1f6feb", "#b35900", "#1a7f37", "#8250df", "#cf222e", "#0a7c86", "#6e7781", "#bf3989"];

  function draw(el) {
    fetch(el.dataset.chart, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
      var sep = el.dataset.sep || ",";
      var labels = (el.dataset.labels || "").split(sep);
      var width = Math.max(280, el.clientWidth || 600);
      if (el._plot) {
        el._plot.setData(body.data);
        if (Math.abs(el._plot.width - width) > 4) { el._plot.setSize({ width: width, height: 220 }); }
        return;
      }
      var series = [{}].concat(body.names.map(function (n, i) {
        return { label: labels[i] || n, stroke: palette[i % palette.length], width: 2, spanGaps: false };
      }));
      el._plot = new uPlot({ width: width, height: 220, series: series,
        axes: [{}, { label: el.dataset.unit || "" }] },
        body.data, el);
    }).catch(function (e) { el.textContent = "chart unavailable: " + e; });
  }

  function drawAll() { charts.forEach(draw); }

  function init(root) {
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      if (charts.indexOf(el) < 0) { charts.push(el); draw(el); }
    });
    root.querySelectorAll("[data-log-form]").forEach(function (form) {
      if (form._bound) { return; }
      form._bound = true;
      var pre = document.getElementById("log");
      var source = null;
      function open() {
        if (source) { source.close(); }
        pre.textContent = "";
        var q = new URLSearchParams(new FormData(form));
        if (!q.get("follow")) { q.set("follow", "0"); }
        source = new EventSource(pre.dataset.logUrl + "?" + q.toString());
        source.addEventListener("line", function (ev) {
          var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
          var tmp = document.createElement("textarea");
          tmp.innerHTML = ev.data;
          pre.appendChild(document.createTextNode(tmp.value));
          if (atEnd) { pre.scrollTop = pre.scrollHeight; }
        });
        source.addEventListener("end", function () { source.close(); source = null; });
      }
      form.addEventListener("submit", function (ev) { ev.preventDefault(); open(); });
      open();
    });
  }

  // A live refresh would reset a form the user is typing in: while a field of the live region
  // has focus, refreshes wait (one already sent is not swapped in), and the last one runs when
  // the focus leaves.
  var deferred = false;
  function editing() {
    var a = document.activeElement;
    return !!(a && a.closest && a.closest("#live") && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName));
  }

  // What identifies a focusable element across a re-render: its tag and its href (or id, or name,
  // or, for a button, its text, since a link's text may be a count that just changed), and which
  // of the equal ones in the region it was.
  function focusSignature(el) {
    return el.tagName + "\u0000" + (el.getAttribute("href") || el.id || el.getAttribute("name") || (el.textContent || "").trim());
  }
  function focusKey(el, region) {
    var sig = focusSignature(el);
    var same = Array.prototype.filter.call(region.querySelectorAll(el.tagName), function (e) { return focusSignature(e) === sig; });
    return { sig: sig, tag: el.tagName, nth: Math.max(0, same.indexOf(el)) };
  }
  function findFocusKey(key, region) {
    var same = Array.prototype.filter.call(region.querySelectorAll(key.tag), function (e) { return focusSignature(e) === key.sig; });
    return same[Math.min(key.nth, same.length - 1)] || null;
  }

  // Confirmation prompts and the filter box's "no submit" live here rather than in inline
  // handlers, which the Content-Security-Policy (script-src 'self') forbids.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (form.hasAttribute("data-no-submit")) { ev.preventDefault(); return; }
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { ev.preventDefault(); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    init(document);
    document.body.addEventListener("htmx:beforeRequest", function (ev) {
      if (ev.detail.elt && ev.detail.elt.id === "live" && editing()) { ev.preventDefault(); deferred = true; }
    });
    document.addEventListener("focusout", function () {
      setTimeout(function () {
        if (deferred && !editing()) { deferred = false; htmx.trigger("#live", "sse:change"); }
      }, 0);
    });
    document.body.addEventListener("htmx:sseOpen", function (ev) {
      ev.detail.source.addEventListener("tick", drawAll);
    });
    // A live refresh replaces the links and buttons a keyboard user may be on: the focused
    // control is found again in the new content (focusSignature) and refocused,
    // or, when it is gone, the focus stays in <main> instead of falling back to <body>.
    var refocus = null;
    document.body.addEventListener("htmx:beforeSwap", function (ev) {
      refocus = null;
      // A refresh sent before the user started typing lands after: it waits like a new one.
      if (ev.detail.target && ev.detail.target.id === "live" && editing()) {
        ev.detail.shouldSwap = false; deferred = true; return;
      }
      var a = document.activeElement;
      if (ev.detail.target && ev.detail.target.id === "live" && a && a !== document.body && ev.detail.target.contains(a)) {
        refocus = focusKey(a, ev.detail.target);
      }
    });
    document.body.addEventListener("htmx:afterSwap", function (ev) {
      init(ev.target);
      if (refocus && ev.target.id === "live") {
        var again = findFocusKey(refocus, ev.target) || document.getElementById("main");
        refocus = null;
        if (again) { again.focus({ preventScroll: true }); }
      }
    });
    window.addEventListener("resize", function () { drawAll(); });
  });
})();
