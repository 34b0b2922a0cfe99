/* ragmeter lab: what the label and review pages share (loaded by both, after lab.js): small DOM
   helpers and their requests -- a JSON POST carrying the page's CSRF token, a JSON GET. Put on
   window.ragmeterLab; no eval, nothing inline (the CSP forbids both). */
(function () {
  "use strict";
  var lab = window.ragmeterLab;
  if (!lab) { return; }

  lab.$ = function (sel, root) { return (root || document).querySelector(sel); };
  lab.$all = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };
  lab.same = function (a, b) { return JSON.stringify(a) === JSON.stringify(b); };

  // POST `body` as JSON with the CSRF token; resolves to {status, data}: data is the answer's
  // JSON, or {error: its text} when it is not JSON (a proxy's error page)
  lab.send = function (url, body, csrf) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, "Accept": "application/json" },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.text().then(function (t) {
        var data = null;
        try { data = t ? JSON.parse(t) : null; } catch (e) { data = { error: t }; }
        return { status: r.status, data: data || {} };
      });
    });
  };

  lab.getJSON = function (url) {
    return fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        return r.json().then(function (d) { return { status: r.status, data: d }; });
      });
  };
})();
