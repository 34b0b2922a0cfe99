/* ragmeter lab: the label view (/label/QUEUE/item/ID). No inline code, no eval (the CSP forbids
   both); every string from the corpus or the queue goes into the page as text (textContent),
   never as markup.

   Offsets. A span is stored as Python str indices (code points) into doc.text. The document is
   drawn here from JSON as text nodes and <mark>s (never parsed as HTML: the parser would turn
   "\r\n" into "\n" and drop a leading newline), so the DOM text equals doc.text; a selection's
   UTF-16 offsets into it are converted to code points (a surrogate pair is one code point), and
   the selected string goes with the save: the server refuses a span whose
   doc.text[start:end] is not that string. */
(function () {
  "use strict";

  // -- code points and UTF-16 ---------------------------------------------------------------
  function isHigh(c) { return c >= 0xd800 && c <= 0xdbff; }
  function isLow(c) { return c >= 0xdc00 && c <= 0xdfff; }

  /** The UTF-16 index of code point ``cp`` in ``text``. */
  function u16At(text, cp) {
    var i = 0, n = 0;
    while (n < cp && i < text.length) {
      i += (isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1))) ? 2 : 1;
      n += 1;
    }
    return i;
  }

  /** The code point index of UTF-16 index ``u`` in ``text`` (inside a pair: the pair's start). */
  function cpAt(text, u) {
    var i = 0, n = 0;
    while (i < u && i < text.length) {
      var pair = isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1));
      if (pair && i + 1 === u) { break; }
      i += pair ? 2 : 1;
      n += 1;
    }
    return n;
  }

  // -- drawing a document with highlighted layers ---------------------------------------------
  /** Draw ``text`` into ``el``: plain text nodes, and a <mark> for each stretch covered by one
      or more layers ({start, end} in UTF-16 units, cls, title); nothing else goes inside. */
  function drawText(el, text, layers) {
    while (el.firstChild) { el.removeChild(el.firstChild); }
    var cuts = [0, text.length];
    layers.forEach(function (l) { cuts.push(l.start, l.end); });
    cuts = cuts.filter(function (c, i, a) { return c >= 0 && c <= text.length && a.indexOf(c) === i; })
      .sort(function (a, b) { return a - b; });
    for (var i = 0; i + 1 < cuts.length; i++) {
      var a = cuts[i], b = cuts[i + 1];
      if (a === b) { continue; }
      var piece = text.slice(a, b);
      var on = layers.filter(function (l) { return l.start <= a && b <= l.end; });
      if (!on.length) { el.appendChild(document.createTextNode(piece)); continue; }
      var mark = document.createElement("mark");
      var classes = [];
      var titles = [];
      on.forEach(function (l) {
        l.cls.split(" ").forEach(function (c) { if (c && classes.indexOf(c) < 0) { classes.push(c); } });
        if (l.title) { titles.push(l.title); }
        if (l.id && !mark.id) { mark.id = l.id; }
      });
      mark.className = classes.join(" ");
      if (titles.length) { mark.title = titles.join("; "); }
      mark.appendChild(document.createTextNode(piece));
      el.appendChild(mark);
    }
  }

  /** The UTF-16 offset of the boundary (node, offset) in ``el``'s text. */
  function offsetIn(el, node, offset) {
    var r = document.createRange();
    r.setStart(el, 0);
    r.setEnd(node, offset);
    return r.toString().length;
  }

  window.ragmeterLabel = { u16At: u16At, cpAt: cpAt, drawText: drawText, offsetIn: offsetIn };
})();

(function () {
  "use strict";
  var L = window.ragmeterLabel;
  var lab = window.ragmeterLab;

  // save.js's helpers, shared with the review page
  var $ = lab.$, $all = lab.$all, same = lab.same, send = lab.send, getJSON = lab.getJSON;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "…" : s; }

  // -- the evidence label page ------------------------------------------------------------------
  lab.behaviours["label-item"] = function (root) {
    var data = lab.readJSON(root.dataset.data);
    var csrf = root.dataset.csrf;
    var draftKey = "ragmeter-label:" + data.queue + ":" + data.item.id + ":" + data.labeller;
    var saved = data.label ? data.label.payload : null;
    var revision = data.label ? data.label.revision : 0;
    var state = blank(data.label ? data.label.payload : data.prefill);
    var pending = null;     // the selection not yet graded: {doc, start, end, text}
    var current = -1;       // the span the keys 1/2/r act on when nothing is pending
    var docs = {};          // doc id -> {id, title, text}
    var shown = null;       // the document on screen
    var passage = null;     // the search passage shown in it {start, end} (code points)
    var inflight = null, timer = null;

    var status = $(".label-status", root);
    var docBox = $(".doc-text", root);

    function blank(p) {
      p = p || {};
      return {
        spans: (p.spans || []).map(function (s) {
          return { doc: s.doc, start: s.start, end: s.end, grade: s.grade || 2,
                   required: !!s.required, text: s.text || "" };
        }),
        answer: p.answer === undefined ? null : p.answer,
        answerable: p.answerable === undefined ? true : !!p.answerable,
        slices: (p.slices || []).slice(),
        split: p.split || null,
        skipped: !!p.skipped,
        note: p.note === undefined ? null : p.note,
        question: p.question === undefined ? null : p.question
      };
    }

    function say(text, cls) {
      status.textContent = text;
      status.className = "label-status" + (cls ? " " + cls : "");
    }

    // -- the form <-> state -------------------------------------------------------------------
    var answer = $("textarea[name=answer]", root);
    var unanswerable = $("input[name=unanswerable]", root);
    var slices = $("input[name=slices]", root);
    var split = $("select[name=split]", root);
    var note = $("textarea[name=note]", root);
    var question = $("textarea[name=question]", root); // a drafted question's text, editable

    function formToState() {
      state.answer = answer.value.trim() ? answer.value : null;
      state.answerable = !unanswerable.checked;
      state.slices = slices.value.split(",").map(function (s) { return s.trim(); })
        .filter(function (s, i, a) { return s && a.indexOf(s) === i; });
      state.split = split.value || null;
      state.note = note.value.trim() ? note.value : null;
      if (question) { state.question = question.value.trim() ? question.value : null; }
    }

    function stateToForm() {
      answer.value = state.answer || "";
      unanswerable.checked = !state.answerable;
      slices.value = state.slices.join(", ");
      split.value = state.split || "";
      note.value = state.note || "";
      if (question) { question.value = state.question || data.item.question; }
    }

    function payload() {
      formToState();
      return {
        spans: state.spans.map(function (s) {
          return { doc: s.doc, start: s.start, end: s.end, grade: s.grade,
                   required: s.required, text: s.text };
        }),
        answer: state.answer,
        answerable: state.answerable,
        slices: state.slices,
        split: state.split,
        skipped: state.skipped,
        note: state.note,
        question: state.question
      };
    }

    // -- drafts: what is typed survives a reload before it is saved ----------------------------
    function keepDraft() {
      try {
        localStorage.setItem(draftKey, JSON.stringify({ base: revision, payload: payload() }));
      } catch (e) { /* storage full or off: the server copy is the record */ }
    }
    function dropDraft() { try { localStorage.removeItem(draftKey); } catch (e) { /* off */ } }
    function readDraft() {
      try { return JSON.parse(localStorage.getItem(draftKey) || "null"); } catch (e) { return null; }
    }

    function changed() {
      keepDraft();
      drawSpans();
      redraw();
      say(revision ? "unsaved changes (saved revision " + revision + ")" : "not saved yet", "dirty");
      if (timer) { clearTimeout(timer); }
      timer = setTimeout(function () { if (!pending && dirty()) { save(); } }, 2000);
    }

    function dirty() { return !same(payload(), normal(saved)); }
    function normal(p) {
      var b = blank(p);
      return {
        spans: b.spans, answer: b.answer, answerable: b.answerable, slices: b.slices,
        split: b.split, skipped: b.skipped, note: b.note, question: b.question
      };
    }

    // -- the spans list -------------------------------------------------------------------------
    var list = $(".span-list", root);
    function titleOf(doc) { return docs[doc] && docs[doc].title ? docs[doc].title : doc; }

    function drawSpans() {
      while (list.firstChild) { list.removeChild(list.firstChild); }
      if (pending) {
        var li = el("li", "span-item pending");
        li.appendChild(el("span", "span-doc", titleOf(pending.doc)));
        li.appendChild(el("q", "span-text", clip(pending.text, 160)));
        li.appendChild(el("span", "span-hint", "selected: press 1 (helpful) or 2 (answers it); Esc drops it"));
        list.appendChild(li);
      }
      state.spans.forEach(function (s, i) {
        var li = el("li", "span-item" + (i === current ? " current" : ""));
        li.dataset.index = String(i);
        var open = el("button", "link span-doc", titleOf(s.doc));
        open.type = "button";
        open.title = "show it in its document";
        open.addEventListener("click", function () { current = i; openDoc(s.doc, null, "span-" + i); drawSpans(); });
        li.appendChild(open);
        li.appendChild(el("q", "span-text", clip(s.text, 160)));
        var g = el("span", "span-grade");
        [1, 2].forEach(function (n) {
          var b = el("button", "grade-btn" + (s.grade === n ? " on" : ""), String(n));
          b.type = "button";
          b.title = n === 2 ? "grade 2: answers it" : "grade 1: helpful";
          b.setAttribute("aria-pressed", s.grade === n ? "true" : "false");
          b.addEventListener("click", function () { s.grade = n; current = i; changed(); });
          g.appendChild(b);
        });
        li.appendChild(g);
        var req = el("label", "span-required");
        var box = document.createElement("input");
        box.type = "checkbox";
        box.checked = s.required;
        box.addEventListener("change", function () { s.required = box.checked; current = i; changed(); });
        req.appendChild(box);
        req.appendChild(document.createTextNode(" required"));
        li.appendChild(req);
        var rm = el("button", "link danger", "remove");
        rm.type = "button";
        rm.addEventListener("click", function () {
          state.spans.splice(i, 1);
          current = Math.min(current, state.spans.length - 1);
          changed();
        });
        li.appendChild(rm);
        list.appendChild(li);
      });
      if (!pending && !state.spans.length) {
        list.appendChild(el("li", "span-empty", state.answerable
          ? "No span yet: open a document (search, or a passage below) and select the evidence with the mouse."
          : "Unanswerable: no evidence."));
      }
      var count = $(".span-count", root);
      if (count) { count.textContent = String(state.spans.length); }
    }

    // -- the document -----------------------------------------------------------------------------
    var docTitle = $(".doc-title", root);
    var docId = $(".doc-id", root);

    // what the document box holds now: a change that leaves its marks as they are (typing in
    // a field, say) does not draw it again, so a long document is not laid out on every key
    var drawn = { doc: null, layers: null };

    function redraw() {
      if (!shown) { return; }
      var text = shown.text;
      var layers = [];
      function add(s, cls, title, id) {
        layers.push({ start: L.u16At(text, s.start), end: L.u16At(text, s.end), cls: cls, title: title, id: id });
      }
      if (passage) { add(passage, "passage", "search result", "passage"); }
      state.spans.forEach(function (s, i) {
        if (s.doc === shown.id) {
          add(s, "span g" + s.grade + (s.required ? " req" : ""),
              "grade " + s.grade + (s.required ? ", required" : ""), "span-" + i);
        }
      });
      if (pending && pending.doc === shown.id) { add(pending, "pending", "selected, not graded yet", "pending"); }
      var key = JSON.stringify(layers);
      if (drawn.doc === shown && drawn.layers === key) { return; }
      L.drawText(docBox, text, layers);
      drawn = { doc: shown, layers: key };
    }

    function openDoc(id, at, scrollTo) {
      var show = function (d) {
        shown = d;
        passage = at;
        docTitle.textContent = d.title || d.id;
        docId.textContent = d.id;
        $(".doc-panel", root).hidden = false;
        var empty = $(".doc-empty", root);
        if (empty) { empty.hidden = true; }
        redraw();
        var target = scrollTo ? document.getElementById(scrollTo) : (at ? document.getElementById("passage") : null);
        if (target) { target.scrollIntoView({ block: "center" }); } else { docBox.scrollTop = 0; }
      };
      if (docs[id]) { show(docs[id]); return Promise.resolve(); }
      return getJSON(data.urls.doc + encodeURIComponent(id)).then(function (r) {
        if (r.status !== 200) { say(r.data.error || "could not open " + id, "error"); return; }
        docs[id] = r.data;
        show(r.data);
        drawSpans();
      });
    }

    docBox.addEventListener("mouseup", function () {
      var sel = window.getSelection();
      if (!shown || !sel || sel.rangeCount === 0 || sel.isCollapsed) { return; }
      var range = sel.getRangeAt(0);
      if (!docBox.contains(range.startContainer) || !docBox.contains(range.endContainer)) { return; }
      var a = L.offsetIn(docBox, range.startContainer, range.startOffset);
      var b = L.offsetIn(docBox, range.endContainer, range.endOffset);
      var selected = range.toString();
      if (b <= a || !selected) { return; }
      var text = shown.text;
      pending = { doc: shown.id, start: L.cpAt(text, a), end: L.cpAt(text, b), text: selected };
      if (L.u16At(text, pending.end) < b) { pending.end += 1; } // ends inside a pair: keep the pair
      var a2 = L.u16At(text, pending.start), b2 = L.u16At(text, pending.end);
      if (a2 !== a || b2 !== b) { pending.text = text.slice(a2, b2); } // widened to whole pairs
      sel.removeAllRanges();
      drawSpans();
      redraw();
      say("selected " + (pending.end - pending.start) + " characters: press 1 or 2 to grade", "dirty");
    });

    function overlapping(p) {
      for (var i = 0; i < state.spans.length; i++) {
        var s = state.spans[i];
        if (s.doc === p.doc && p.start < s.end && s.start < p.end) { return i; }
      }
      return -1;
    }

    function grade(n) {
      if (pending && overlapping(pending) >= 0) {
        say("the selection overlaps a span already marked: remove that one, or select text " +
            "beside it (Esc drops the selection)", "error");
        return;
      }
      if (pending) {
        state.spans.push({ doc: pending.doc, start: pending.start, end: pending.end, grade: n,
                           required: false, text: pending.text });
        current = state.spans.length - 1;
        pending = null;
        if (!state.answerable) { state.answerable = true; stateToForm(); }
        changed();
      } else if (current >= 0 && state.spans[current]) {
        state.spans[current].grade = n;
        changed();
      }
    }

    function toggleRequired() {
      if (pending) {
        grade(2);
        if (pending) { return; } // refused (it overlaps a span): nothing to mark required
      }
      var s = state.spans[current];
      if (s) { s.required = !s.required; changed(); }
    }

    // -- saving ---------------------------------------------------------------------------------
    var conflict = $(".conflict", root);

    /** Save the label (``extra``: fields to send as they are, e.g. a skip). One save at a time:
        asked while one is on its way, it waits for that one, then saves what is still unsaved.
        Resolves true when the server holds what the page shows. */
    function save(extra) {
      if (pending) { say("grade the selected span first (1 or 2), or drop it with Esc", "error"); return Promise.resolve(false); }
      if (inflight) {
        return inflight.then(function (ok) { return (ok && !extra && !dirty()) ? true : save(extra); });
      }
      if (timer) { clearTimeout(timer); timer = null; }
      if (!extra) { state.skipped = false; } // saving a label un-skips the question
      var body = payload();
      if (extra) { Object.keys(extra).forEach(function (k) { body[k] = extra[k]; }); }
      say("saving…");
      inflight = send(data.urls.save, { payload: body, expected_revision: revision }, csrf).then(function (r) {
        inflight = null;
        if (r.status === 200) {
          revision = r.data.revision;
          saved = r.data.payload;
          state.skipped = !!saved.skipped;
          if (dirty()) { keepDraft(); } else { dropDraft(); } // typed while it was on its way
          conflict.hidden = true;
          say("saved (revision " + revision + ")", "ok");
          $(".label-revision", root).textContent = String(revision);
          return true;
        }
        if (r.status === 409) { showConflict(r.data); return false; }
        say(r.data.error || ("not saved: HTTP " + r.status), "error");
        return false;
      }, function () {
        inflight = null;
        say("not saved: the lab did not answer (your changes are kept in this browser)", "error");
        return false;
      });
      return inflight;
    }

    function summary(p) {
      var ul = el("ul", "plain");
      (p.spans || []).forEach(function (s) {
        ul.appendChild(el("li", null, "grade " + s.grade + (s.required ? ", required" : "") + " · " +
          s.doc + " [" + s.start + ":" + s.end + "] " + clip(s.text || "", 100)));
      });
      if (!(p.spans || []).length) { ul.appendChild(el("li", null, p.skipped ? "skipped" : "no span")); }
      if (p.answer) { ul.appendChild(el("li", null, "answer: " + clip(p.answer, 200))); }
      if (p.answerable === false) { ul.appendChild(el("li", null, "unanswerable")); }
      return ul;
    }

    function showConflict(d) {
      var stored = d.stored || {};
      conflict.hidden = false;
      var body = $(".conflict-body", conflict);
      while (body.firstChild) { body.removeChild(body.firstChild); }
      body.appendChild(el("p", null, d.error || "this label was changed elsewhere"));
      body.appendChild(el("h4", null, "stored (revision " + stored.revision + (stored.updated_at ? ", " + stored.updated_at : "") + ")"));
      body.appendChild(stored.payload ? summary(stored.payload) : el("p", null, "deleted"));
      body.appendChild(el("h4", null, "yours (not saved)"));
      body.appendChild(summary(payload()));
      conflict.dataset.revision = String(stored.revision || 0);
      conflict._stored = stored;
      say("not saved: changed elsewhere (see below)", "error");
    }

    $(".keep-mine", root).addEventListener("click", function () {
      revision = parseInt(conflict.dataset.revision || "0", 10);
      conflict.hidden = true;
      save();
    });
    $(".take-stored", root).addEventListener("click", function () {
      var stored = conflict._stored || {};
      revision = stored.revision || 0;
      saved = stored.payload || null;
      state = blank(saved);
      pending = null;
      current = -1;
      stateToForm();
      dropDraft();
      conflict.hidden = true;
      $(".label-revision", root).textContent = String(revision);
      drawSpans();
      redraw();
      say("loaded the stored label (revision " + revision + ")", "ok");
    });

    function go(url) { window.location.assign(url); }

    function next() {
      if (dirty()) {
        save().then(function (ok) { if (ok) { go(data.urls.next); } });
      } else { go(data.urls.next); }
    }
    function skip() {
      state.skipped = true;
      save({ skipped: true }).then(function (ok) { if (ok) { go(data.urls.next); } });
    }

    var del = $(".delete-label", root);
    if (del) {
      del.addEventListener("click", function () {
        if (!revision) { say("nothing saved to delete"); return; }
        send(data.urls.delete, { expected_revision: revision }, csrf).then(function (r) {
          if (r.status === 200) {
            revision = 0;
            saved = null;
            state = blank(null);
            pending = null;
            stateToForm();
            dropDraft();
            $(".label-revision", root).textContent = "0";
            drawSpans();
            redraw();
            say("deleted", "ok");
          } else if (r.status === 409) { showConflict(r.data); }
          else { say(r.data.error || "not deleted", "error"); }
        });
      });
    }

    $(".save-label", root).addEventListener("click", function () { save(); });
    $(".next-item", root).addEventListener("click", next);
    $(".skip-item", root).addEventListener("click", skip);
    [answer, slices, note, question].forEach(function (f) { if (f) { f.addEventListener("input", changed); } });
    [unanswerable, split].forEach(function (f) { f.addEventListener("change", changed); });
    unanswerable.addEventListener("change", function () {
      if (unanswerable.checked && state.spans.length) {
        say("an unanswerable question has no evidence: remove its spans first", "error");
        unanswerable.checked = false;
        formToState();
      }
    });

    // -- keys -----------------------------------------------------------------------------------
    document.addEventListener("keydown", function (e) {
      var t = e.target;
      var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); return; }
      if (typing) {
        if (e.key === "Escape") { t.blur(); }
        if (e.key === "Enter" && t.tagName === "INPUT" && t.type !== "search") { e.preventDefault(); save(); }
        return;
      }
      if (e.altKey || e.ctrlKey || e.metaKey) { return; }
      var k = e.key;
      if (k === "1" || k === "2") { e.preventDefault(); grade(parseInt(k, 10)); }
      else if (k === "r") { e.preventDefault(); toggleRequired(); }
      else if (k === "s" || k === "Enter") {
        if (k === "Enter" && t && t.tagName === "BUTTON") { return; }
        e.preventDefault(); save();
      }
      else if (k === "n") { e.preventDefault(); next(); }
      else if (k === "k") { e.preventDefault(); skip(); }
      else if (k === "/") { e.preventDefault(); $("input[name=q]", root).focus(); }
      else if (k === "Escape") {
        if (pending) { pending = null; drawSpans(); redraw(); say("selection dropped"); }
      }
    });

    // -- search -----------------------------------------------------------------------------------
    var results = $(".search-results", root);
    $(".search-form", root).addEventListener("submit", function (e) {
      e.preventDefault();
      var q = $("input[name=q]", root).value;
      var retriever = $("select[name=retriever]", root);
      var url = data.urls.search + "?q=" + encodeURIComponent(q) +
        (retriever ? "&retriever=" + encodeURIComponent(retriever.value) : "");
      while (results.firstChild) { results.removeChild(results.firstChild); }
      results.appendChild(el("li", "note", "searching…"));
      getJSON(url).then(function (r) {
        while (results.firstChild) { results.removeChild(results.firstChild); }
        if (r.status !== 200) { results.appendChild(el("li", "error", r.data.error || "search failed")); return; }
        if (!r.data.results.length) { results.appendChild(el("li", "note", "no passage matches")); }
        r.data.results.forEach(function (p, i) {
          var li = el("li", "result");
          var head = el("div", "meta");
          var title = el("button", "link result-title", p.title || p.doc);
          title.type = "button";
          head.appendChild(el("span", "rank", String(i + 1)));
          head.appendChild(title);
          head.appendChild(el("code", null, p.doc));
          head.appendChild(el("span", null, "score " + Number(p.score).toFixed(3)));
          li.appendChild(head);
          li.appendChild(el("div", "text", p.text));
          li.addEventListener("click", function () {
            $all(".result.open", results).forEach(function (x) { x.classList.remove("open"); });
            li.classList.add("open");
            openDoc(p.doc, { start: p.start, end: p.end });
          });
          results.appendChild(li);
        });
      });
    });

    $all("[data-open-doc]", root).forEach(function (b) {
      b.addEventListener("click", function () {
        var s = b.dataset.start, e = b.dataset.end;
        openDoc(b.dataset.openDoc, s !== undefined && e !== undefined ? { start: +s, end: +e } : null);
      });
    });

    // -- start: the saved label, or this browser's draft of it ----------------------------------
    var draft = readDraft();
    if (draft && draft.payload && !same(normal(draft.payload), saved ? normal(saved) : normal(null))) {
      if (draft.base === revision) {
        state = blank(draft.payload);
        say("restored your unsaved changes from this browser (not saved yet)", "dirty");
      } else {
        var restore = $(".restore-draft", root);
        restore.hidden = false;
        $("button", restore).addEventListener("click", function () {
          state = blank(draft.payload);
          restore.hidden = true;
          stateToForm();
          changed();
        });
        say(revision ? "saved (revision " + revision + ")" : "not saved yet");
      }
    } else {
      say(revision ? "saved (revision " + revision + ")" : "not saved yet", revision ? "ok" : "");
    }
    stateToForm();
    drawSpans();
    var first = state.spans.length ? state.spans[0].doc : (data.open_doc || null);
    if (first) { openDoc(first, null, state.spans.length ? "span-0" : null); }
  };
})();
