/* Argora study phases: the exit survey keeps what the worker typed. Each change is saved as a draft on the server
 * (drafts.js: debounced, one request at a time, and once more when the page is hidden); the server puts them back into
 * the page when it is opened again, so a reload or a crash loses nothing. Without JavaScript the form is a plain
 * POST and nothing here is needed. */
(function () {
  "use strict";
  var form = document.getElementById("survey-form");
  if (!form || !form.dataset.draftUrl) return;

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
  var drafts = window.ArgoraDrafts.saver({
    url: form.dataset.draftUrl, status: document.getElementById("survey-saved"),
    csrf: form.elements.csrfmiddlewaretoken ? form.elements.csrfmiddlewaretoken.value : "",
    savedText: "Your answers are saved as you type.",
    state: function () { return { answers: answers() }; }
  });
  form.addEventListener("input", drafts.changed);
  form.addEventListener("change", drafts.changed);
  form.addEventListener("submit", drafts.stop);  // a stopped saver saves nothing more
  var errors = document.getElementById("survey-errors");
  if (errors) {
    var first = form.querySelector(".survey-q.has-error input, .survey-q.has-error textarea");
    (first || errors).focus();
  }
})();
