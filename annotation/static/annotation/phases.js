/* Argora study phases: the exit survey keeps what the worker typed. Each change is saved as a draft on the server
 * (debounced, one request at a time, and once more when the page is hidden); the server puts the answers back into
 * the page when it is opened again, so a reload or a crash loses nothing. Without JavaScript the form is a plain
 * POST and nothing here is needed. */
(function () {
  "use strict";
  var form = document.getElementById("survey-form");
  if (!form || !form.dataset.draftUrl) return;
  var status = document.getElementById("survey-saved");
  var csrf = form.elements.csrfmiddlewaretoken ? form.elements.csrfmiddlewaretoken.value : "";
  var timer = null, inFlight = false, again = false, stopped = false, sending = false;

  function answers() {
    var out = {};
    Array.prototype.forEach.call(form.querySelectorAll(".survey-q"), function (box) {
      var name = box.dataset.name, field = form.elements["q-" + name];
      if (!field) return;
      if (field.length !== undefined && field.tagName === undefined) {  // a radio group
        var checked = box.querySelector("input:checked");
        out[name] = checked ? checked.value : "";
      } else {
        out[name] = field.value;
      }
    });
    return out;
  }
  var last = JSON.stringify({ answers: answers() });

  function say(text, failed) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("failed", !!failed);
  }

  function save(leaving) {
    if (stopped || sending) return;
    var body = JSON.stringify({ answers: answers() });
    if (body === last) return;
    if (inFlight && !leaving) { again = true; return; }
    inFlight = true;
    say("Saving your answers…");
    fetch(form.dataset.draftUrl, {
      method: leaving ? "POST" : "PUT", credentials: "same-origin", keepalive: !!leaving,
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
      body: body
    }).then(function (resp) {
      if (resp.ok) { last = body; say("Your answers are saved as you type."); }
      else if (resp.status === 409 || resp.status === 403 || resp.status === 404) { stopped = true; say(""); }
      else say("Your answers could not be saved (the server answered " + resp.status + "); they are still here.", true);
    }).catch(function () {
      say("Could not reach the server to save your answers; they are still here.", true);
    }).then(function () {
      inFlight = false;
      if (again) { again = false; save(); }
    });
  }

  function changed() { clearTimeout(timer); timer = setTimeout(save, 400); }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", function () { sending = true; clearTimeout(timer); });
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") save(true); });
  window.addEventListener("pagehide", function () { save(true); });
  var errors = document.getElementById("survey-errors");
  if (errors) {
    var first = form.querySelector(".survey-q.has-error input, .survey-q.has-error textarea");
    (first || errors).focus();
  }
})();
