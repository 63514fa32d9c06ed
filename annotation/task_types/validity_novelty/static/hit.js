/* validity_novelty: two questions per item (validity, novelty), each yes / no / don't know.
 * Keys on the focused item: 1 / 2 / 3 (top row or numpad) answer the highlighted question; after validity the
 * highlight moves to novelty, and once both are answered focus moves on to the next item. V or N highlights
 * validity or novelty (so "V 2" changes validity to no). A change to an item that was already complete stays on it.
 * The radios stay the single source of truth (the no-JS form posts them as item-<id>-validity / -novelty). */
(function () {
  "use strict";
  var FIELDS = ["validity", "novelty"];
  function radios(el, field) {
    return Array.prototype.slice.call(el.querySelectorAll("input[type=radio][name$='-" + field + "']"));
  }
  function value(el, field) {
    var r = radios(el, field).filter(function (x) { return x.checked; })[0];
    return r ? r.value : null;
  }
  function answered(el) { return value(el, "validity") !== null && value(el, "novelty") !== null; }
  function task(el) { return el.querySelector(".vn-task"); }
  function active(el) { var t = task(el); return (t && t.dataset.active) || "validity"; }
  function setActive(el, field) {
    var t = task(el);
    if (!t) return;
    t.dataset.active = field;
    Array.prototype.forEach.call(el.querySelectorAll(".vn-question"), function (fs) {
      fs.classList.toggle("active", fs.dataset.field === field);
    });
  }
  function other(field) { return field === "validity" ? "novelty" : "validity"; }
  function choose(el, field, index) {
    var rs = radios(el, field);
    if (index < 0 || index >= rs.length) return false;
    rs[index].checked = true;
    rs[index].dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }
  window.ArgoraHIT.register("validity_novelty", {
    setup: function (el) {
      FIELDS.forEach(function (field) {
        radios(el, field).forEach(function (r) {
          r.tabIndex = -1;
          r.addEventListener("change", function () {  // a click: highlight the question still open, if any
            if (r.checked && value(el, other(field)) === null) setActive(el, other(field));
          });
        });
      });
      setActive(el, value(el, "validity") !== null && value(el, "novelty") === null ? "novelty" : "validity");
    },
    isAnswered: answered,
    collect: function (el) {
      var out = {};
      FIELDS.forEach(function (field) { var v = value(el, field); if (v !== null) out[field] = v; });
      return out;
    },
    onKey: function (el, ev) {
      var key = (ev.key || "").toLowerCase();
      if (!ev.shiftKey && (key === "v" || key === "n")) {
        setActive(el, key === "v" ? "validity" : "novelty");
        return true;
      }
      var m = /^(?:Digit|Numpad)([1-3])$/.exec(ev.code || "");
      var digit = m ? parseInt(m[1], 10) : (/^[1-3]$/.test(ev.key) ? parseInt(ev.key, 10) : 0);
      if (!digit) return false;
      var field = active(el), wasComplete = answered(el);
      if (!choose(el, field, digit - 1)) return false;
      if (value(el, other(field)) === null) { setActive(el, other(field)); return true; }
      if (wasComplete) return true;  // a correction: stay on this item
      setActive(el, "validity");
      return "answered";
    }
  });
})();
