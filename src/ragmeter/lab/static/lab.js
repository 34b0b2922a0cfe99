/* ragmeter lab: charts and small behaviours. No eval (the CSP forbids it): Vega runs with its
   expression interpreter. Data comes from <script type="application/json"> blocks. */
(function () {
  "use strict";

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function renderCharts(root) {
    if (typeof vegaEmbed === "undefined") { return; }
    var opts = { actions: false, renderer: "svg", ast: true, defaultStyle: false };
    if (typeof vegaInterpreter !== "undefined") { opts.expr = vegaInterpreter.expressionInterpreter; }
    (root || document).querySelectorAll(".vl-chart").forEach(function (el) {
      if (el.dataset.rendered) { return; }
      var spec = readJSON(el.dataset.spec);
      if (!spec) { return; }
      // the specs are written for the vendored Vega-Lite 6 (an id, never fetched)
      if (!spec.$schema) { spec.$schema = "https://vega.github.io/schema/vega-lite/v6.json"; }
      el.dataset.rendered = "1";
      vegaEmbed(el, spec, opts).then(function (res) {
        var hook = chartHooks[el.dataset.click];
        if (hook) { hook(el, res.view); }
      }).catch(function (err) {
        el.textContent = "chart could not be drawn: " + err;
      });
    });
  }

  // behaviours registered by views: name -> function(element)
  var behaviours = {};
  // what a click on a chart's mark does (the chart's data-click): name -> function(element, view)
  var chartHooks = {};
  window.ragmeterLab = {
    readJSON: readJSON, renderCharts: renderCharts, behaviours: behaviours, chartHooks: chartHooks
  };

  function wire(root) {
    renderCharts(root);
    (root || document).querySelectorAll("[data-behaviour]").forEach(function (el) {
      var fn = behaviours[el.dataset.behaviour];
      if (fn && !el.dataset.wired) { el.dataset.wired = "1"; fn(el); }
    });
  }

  // auto-submit a controls form when one of its selects changes
  behaviours["autosubmit"] = function (form) {
    function submit() { form.requestSubmit ? form.requestSubmit() : form.submit(); }
    form.querySelectorAll("select, input[type=radio]").forEach(function (s) {
      s.addEventListener("change", submit);
    });
    // a number (k, the budget) updates the page as it is typed, once typing pauses; it picks
    // its own radio ("cut at k" for k), and an empty or out-of-range value waits
    var timer = null;
    form.querySelectorAll("input[type=number]").forEach(function (input) {
      input.addEventListener("input", function () {
        clearTimeout(timer);
        timer = setTimeout(function () {
          if (input.value === "" || !input.checkValidity()) { return; }
          var radio = input.dataset.cut && form.querySelector("input[type=radio][value='" + input.dataset.cut + "']");
          if (radio) { radio.checked = true; }
          submit();
        }, 400);
      });
    });
  };

  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("htmx:afterSwap", function (e) { wire(e.target); });
  // an outerHTML swap replaces its target: wire what came in (wired things are skipped)
  document.addEventListener("htmx:afterSettle", function () { wire(document); });
})();

/* The slider (/slider): the values come from the server's rank curve (JSON); moving the range
   input only looks them up, updates the cards, highlights the table row and moves the chart's
   rank rule (a Vega signal). */
(function () {
  "use strict";
  var lab = window.ragmeterLab;
  lab.behaviours["slider"] = function (root) {
    var curve = lab.readJSON(root.dataset.curve);
    var spec = lab.readJSON(root.dataset.spec);
    var input = root.querySelector(".slider-input");
    var shown = root.querySelector(".slider-rank");
    var view = null;
    var holder = root.querySelector(".slider-chart");
    if (holder && spec && typeof vegaEmbed !== "undefined") {
      var opts = { actions: false, renderer: "svg", ast: true, defaultStyle: false };
      if (typeof vegaInterpreter !== "undefined") { opts.expr = vegaInterpreter.expressionInterpreter; }
      vegaEmbed(holder, spec, opts).then(function (res) { view = res.view; update(); })
        .catch(function (err) { holder.textContent = "chart could not be drawn: " + err; });
    }
    function update() {
      var rank = parseInt(input.value, 10);
      var row = curve.rows[rank - 1];
      if (!row) { return; }
      shown.textContent = String(rank);
      root.querySelectorAll(".slider-value").forEach(function (el) {
        var v = row[el.dataset.metric];
        el.textContent = (typeof v === "number") ? v.toFixed(3) : "-";
      });
      document.querySelectorAll(".slider-row").forEach(function (tr) {
        tr.classList.toggle("current", tr.dataset.rank === String(rank));
      });
      if (view) { view.signal("rank", rank).runAsync(); }
    }
    input.addEventListener("input", update);
    update();
  };
})();

/* Jobs (/jobs): a refused start (400 bad request, 404, 409 already running or already run)
   answers with a one-line message fragment marked X-Ragmeter-Message; htmx does not swap 4xx
   answers by default, so these are swapped (where the server retargets them, if it does). */
(function () {
  "use strict";
  document.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    if ((status === 400 || status === 404 || status === 409) &&
        e.detail.xhr.getResponseHeader("X-Ragmeter-Message")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
})();

/* A link to "#id" of a closed <details> (the diagnosis grid's cells), or to anything inside
   closed ones (the report's questions, folded in their run's list), opens them and scrolls to
   the target once it can be seen. */
(function () {
  "use strict";
  function openTarget() {
    var id = decodeURIComponent((location.hash || "").slice(1));
    var el = id ? document.getElementById(id) : null;
    var opened = false;
    for (var d = el; d; d = d.parentElement) {
      if (d.tagName === "DETAILS" && !d.open) { d.open = true; opened = true; }
    }
    if (opened) { el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("DOMContentLoaded", openTarget);
})();

/* The lab's per-question table (/lab): a click on a bar of the change chart shows its row
   (highlighted, scrolled to; on another page of the table, that page is opened at "#q=ID");
   "CSV of the rows shown" writes the rows on the page as the server writes them (each row's
   fields come from the server in data-csv; _lab_csv.py quotes them the same way). */
(function () {
  "use strict";
  var lab = window.ragmeterLab;

  function rowOf(qid) {
    var rows = document.querySelectorAll("#questions-table details.q");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].dataset.qid === qid) { return rows[i]; }
    }
    return null;
  }

  function focusRow(qid) {
    var row = rowOf(qid);
    if (!row) { return false; }
    document.querySelectorAll("#questions-table details.q.focused").forEach(function (r) {
      r.classList.remove("focused");
    });
    row.classList.add("focused");
    row.scrollIntoView({ block: "center" });
    return true;
  }

  lab.chartHooks["row"] = function (el, view) {
    view.addEventListener("click", function (event, item) {
      var d = item && item.datum;
      if (!d || typeof d.qid !== "string") { return; }
      if (focusRow(d.qid)) {
        history.replaceState(history.state, "", "#q=" + encodeURIComponent(d.qid));
      } else if (typeof d.url === "string" && d.url.indexOf("/lab?") === 0) {
        location.assign(d.url);
      }
    });
  };

  function fromHash() {
    var h = location.hash || "";
    if (h.indexOf("#q=") === 0) { focusRow(decodeURIComponent(h.slice(3))); }
  }
  document.addEventListener("DOMContentLoaded", fromHash);
  window.addEventListener("hashchange", fromHash);

  function quoted(field) {
    return /[",\r\n]/.test(field) ? '"' + field.replace(/"/g, '""') + '"' : field;
  }

  function csvOf(table) {
    var lines = [JSON.parse(table.dataset.csvHead)];
    table.querySelectorAll("details.q").forEach(function (row) {
      if (row.offsetParent !== null || row.getClientRects().length) {
        lines.push(JSON.parse(row.dataset.csv));
      }
    });
    return lines.map(function (line) { return line.map(quoted).join(",") + "\n"; }).join("");
  }
  lab.csvOf = csvOf;

  lab.behaviours["csv-download"] = function (button) {
    button.addEventListener("click", function () {
      var table = document.getElementById(button.dataset.table);
      if (!table) { return; }
      var blob = new Blob([csvOf(table)], { type: "text/csv;charset=utf-8" });
      var a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = button.dataset.name || "questions.csv";
      document.body.appendChild(a);
      a.click();
      setTimeout(function () { URL.revokeObjectURL(a.href); a.remove(); }, 0);
    });
  };
})();
