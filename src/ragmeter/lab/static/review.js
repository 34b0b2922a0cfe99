/* ragmeter lab: the answer review page (/review/QUEUE/item/ID). No inline code, no eval (the
   CSP forbids both); strings from the queue go into the page as text (textContent), never as
   markup. A review is saved as {payload, expected_revision} (docs/labelling.md); a 409 shows
   the stored review beside yours, and unsaved changes are kept in this browser until saved. */
(function () {
  "use strict";
  var lab = window.ragmeterLab;
  if (!lab) { return; }

  // save.js's helpers, shared with the label page
  var $ = lab.$, $all = lab.$all, same = lab.same, send = lab.send;
  function el(tag, text) { var e = document.createElement(tag); e.textContent = String(text); return e; }

  lab.behaviours["review"] = function (root) {
    var data = lab.readJSON(root.dataset.data);
    var csrf = root.dataset.csrf;
    var KEYS = data.keys; // key -> [field, value], as the page lists them
    var FIELDS = ["correct", "supported", "abstention"];
    var draftKey = "ragmeter-review:" + data.queue + ":" + data.item.id + ":" + data.labeller;
    var revision = data.label ? data.label.revision : 0;
    var saved = data.label ? data.label.payload : null;
    var skipped = saved ? !!saved.skipped : false;
    var saving = false;
    var status = $(".label-status", root);
    var note = $("textarea[name=note]", root);
    var conflict = $(".conflict", root);

    function say(text, cls) { status.textContent = text; status.className = "label-status" + (cls ? " " + cls : ""); }
    function pick(name) {
      var on = $("input[name=" + name + "]:checked", root);
      return on && on.value ? on.value : null;
    }
    function normal(p) {
      p = p || {};
      return { correct: p.correct || null, supported: p.supported || null, abstention: p.abstention || null,
               note: p.note || null, skipped: !!p.skipped };
    }
    function payload() {
      return { correct: pick("correct"), supported: pick("supported"), abstention: pick("abstention"),
               note: note.value.trim() ? note.value : null, skipped: skipped };
    }
    function load(p) {
      p = normal(p);
      FIELDS.forEach(function (f) {
        $all("input[name=" + f + "]", root).forEach(function (r) { r.checked = r.value === (p[f] || ""); });
      });
      note.value = p.note || "";
      skipped = p.skipped;
    }
    function setRevision(n) { revision = n; $(".label-revision", root).textContent = String(n); }
    function dirty() { return !same(payload(), normal(saved)); }
    function dropDraft() { try { localStorage.removeItem(draftKey); } catch (e) { /* storage off */ } }
    function changed() {
      try { localStorage.setItem(draftKey, JSON.stringify({ base: revision, payload: payload() })); } catch (e) { /* storage off */ }
      say(revision ? "unsaved changes (saved revision " + revision + ")" : "not saved yet", "dirty");
    }

    function showConflict(r) {
      var stored = r.data.stored || {};
      conflict._stored = stored;
      var body = $(".conflict-body", conflict);
      while (body.firstChild) { body.removeChild(body.firstChild); }
      body.appendChild(el("p", r.data.error || "changed elsewhere"));
      var p = normal(stored.payload);
      var words = FIELDS.map(function (f) { return p[f]; }).filter(Boolean).join(", ");
      body.appendChild(el("p", "stored (revision " + (stored.revision || 0) + "): " +
        (stored.payload ? (words || "not judged") : "deleted")));
      var mine = payload();
      body.appendChild(el("p", "yours: " + (FIELDS.map(function (f) { return mine[f]; }).filter(Boolean).join(", ") || "not judged")));
      conflict.hidden = false;
    }

    function save(skip) {
      if (saving) { return Promise.resolve(false); }
      skipped = !!skip;
      saving = true;
      say("saving…");
      return send(data.urls.save, { payload: payload(), expected_revision: revision }, csrf).then(function (r) {
        saving = false;
        if (r.status === 200) {
          saved = r.data.payload;
          setRevision(r.data.revision);
          dropDraft();
          conflict.hidden = true;
          say("saved (revision " + revision + ")", "ok");
          return true;
        }
        if (r.status === 409) { showConflict(r); say("not saved: changed elsewhere (see below)", "error"); return false; }
        say(r.data.error || ("not saved: HTTP " + r.status), "error");
        return false;
      }, function () { saving = false; say("not saved: the lab did not answer (your changes are kept in this browser)", "error"); return false; });
    }
    function go() { window.location.assign(data.urls.next); }
    function next() {
      if (dirty()) { save(false).then(function (ok) { if (ok) { go(); } }); } else { go(); }
    }
    function skip() { save(true).then(function (ok) { if (ok) { go(); } }); }

    $(".keep-mine", root).addEventListener("click", function () {
      setRevision((conflict._stored || {}).revision || 0);
      save(false);
    });
    $(".take-stored", root).addEventListener("click", function () {
      var stored = conflict._stored || {};
      saved = stored.payload || null;
      setRevision(stored.revision || 0);
      load(saved);
      dropDraft();
      conflict.hidden = true;
      say("loaded the stored review (revision " + revision + ")", "ok");
    });
    $(".save-label", root).addEventListener("click", function () { save(false); });
    $(".next-item", root).addEventListener("click", next);
    $(".skip-item", root).addEventListener("click", skip);
    $(".delete-label", root).addEventListener("click", function () {
      if (!revision) { say("nothing saved to delete"); return; }
      send(data.urls["delete"], { expected_revision: revision }, csrf).then(function (r) {
        if (r.status === 200) { saved = null; setRevision(0); load(null); dropDraft(); say("deleted", "ok"); }
        else if (r.status === 409) { showConflict(r); say("not deleted: changed elsewhere (see below)", "error"); }
        else { say(r.data.error || "not deleted", "error"); }
      });
    });
    $all("input[type=radio]", root).forEach(function (r) { r.addEventListener("change", changed); });
    note.addEventListener("input", changed);

    document.addEventListener("keydown", function (e) {
      var t = e.target;
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(false); return; }
      if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "radio") || t.tagName === "SELECT")) {
        if (e.key === "Escape") { t.blur(); }
        return;
      }
      if (e.altKey || e.ctrlKey || e.metaKey) { return; }
      var k = e.key;
      if (Object.prototype.hasOwnProperty.call(KEYS, k)) {
        e.preventDefault();
        var r = $("input[name=" + KEYS[k][0] + "][value=" + KEYS[k][1] + "]", root);
        if (r) { r.checked = true; changed(); }
      } else if (k === "Enter" && !(t && t.tagName === "BUTTON")) { e.preventDefault(); save(false); }
      else if (k === "n") { e.preventDefault(); next(); }
      else if (k === "k") { e.preventDefault(); skip(); }
    });

    var draft = null;
    try { draft = JSON.parse(localStorage.getItem(draftKey) || "null"); } catch (e) { draft = null; }
    if (draft && draft.base === revision && draft.payload && !same(normal(draft.payload), normal(saved))) {
      load(draft.payload);
      say("restored your unsaved changes from this browser (not saved yet)", "dirty");
    } else {
      load(saved);
      say(revision ? "saved (revision " + revision + ")" : "not saved yet", revision ? "ok" : "");
    }
  };
})();
