/* Argora drafts: what a worker has given so far, saved on the server as it changes, for the HIT page (hit.js, the
 * training phase included) and the exit survey (phases.js). One saver per page:
 *
 *   var drafts = ArgoraDrafts.saver({url, csrf, status, state, savedText, skewMs});
 *   drafts.changed();   // after every change: saved 400 ms after the last one
 *   drafts.stop();      // submitting: nothing more to save
 *
 * `state()` returns the JSON-able object the server's draft endpoint takes ({fields, feedback} or {answers}). Saves
 * are debounced, one request at a time (a change during a save is saved right after it), every 5 s in case a widget
 * changed its fields without telling, and once more as a keepalive POST when the page is hidden or closed. The
 * status element says "saved" (`savedText`) only while the server holds what is on screen: a change waiting for its
 * save shows "Saving your answers…" at once. Each save carries `revision`, the server's clock in ms as the page
 * reckons it (`skewMs` = the server's clock - this browser's, from the page), so the server can keep the newest of
 * saves that cross on the way. A 403 / 404 / 409 (the HIT was submitted or taken back elsewhere) stops the saver. */
(function () {
  "use strict";

  function saver(opts) {
    var url = opts.url, status = opts.status, state = opts.state;
    var savedText = opts.savedText || "Your answers are saved as you go.";
    var skew = isNaN(opts.skewMs) ? 0 : (opts.skewMs || 0);
    var last = null, timer = null, inFlight = false, again = false, stopped = !url, dirty = false, revision = 0;

    function body() { return JSON.stringify(state()); }
    function say(text, failed) {
      if (!status) return;
      status.textContent = text;
      status.classList.toggle("failed", !!failed);
    }
    function save(leaving) {
      if (stopped) return;
      if (inFlight && !leaving) { again = true; return; }
      var data = body();
      if (data === last) {
        if (dirty && !inFlight) { dirty = false; say(savedText); }
        return;
      }
      inFlight = true;
      dirty = true;
      say("Saving your answers…");
      revision = Math.max(Date.now() + skew, revision + 1);
      var sent = JSON.parse(data);
      sent.revision = revision;
      fetch(url, {
        method: leaving ? "POST" : "PUT", credentials: "same-origin", keepalive: !!leaving,
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": opts.csrf || "" },
        body: JSON.stringify(sent)
      }).then(function (resp) {
        if (resp.ok) { last = data; if (!again) { dirty = false; say(savedText); } }
        else if (resp.status === 409 || resp.status === 403 || resp.status === 404) { stopped = true; say(""); }
        else say("Your answers could not be saved (the server answered " + resp.status + "); they are still here.", true);
      }).catch(function () {
        say("Could not reach the server to save your answers; they are still here.", true);
      }).then(function () {
        inFlight = false;
        if (again) { again = false; save(); }
      });
    }
    if (!stopped) {
      last = body();  // what the server sent is what it has
      setInterval(function () { save(); }, 5000);
      document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") save(true); });
      window.addEventListener("pagehide", function () { save(true); });
    }
    return {
      changed: function () {
        if (stopped) return;
        clearTimeout(timer);
        if (!dirty && body() !== last) { dirty = true; say("Saving your answers…"); }
        timer = setTimeout(save, 400);
      },
      stop: function () { stopped = true; clearTimeout(timer); }
    };
  }

  window.ArgoraDrafts = { saver: saver };
})();
