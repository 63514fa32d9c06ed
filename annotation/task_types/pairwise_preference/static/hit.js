/* pairwise_preference: three questions per item -- which argument is more persuasive (1 / 2 / 3 = argument 1 /
 * argument 2 / equally), then the fluency of argument 1 and of argument 2 (Y / N, or 1 / 2). The highlighted
 * question moves on by itself; once all three are answered focus moves to the next item. Left / right arrows move
 * the highlight between the questions. A change to an item that was already complete stays on it.
 * The radios and the hidden "left" input stay the single source of truth (the no-JS form posts them). */
(function () {
  "use strict";
  var ORDER = ["choice", "fluent_left", "fluent_right"];
  var CHOICES = { choice: ["left", "right", "equal"], fluent_left: ["yes", "no"], fluent_right: ["yes", "no"] };
  function radios(el, field) {
    return Array.prototype.slice.call(el.querySelectorAll("input[type=radio][name$='-" + field + "']"));
  }
  function value(el, field) {
    var r = radios(el, field).filter(function (x) { return x.checked; })[0];
    return r ? r.value : null;
  }
  function answered(el) { return ORDER.every(function (f) { return value(el, f) !== null; }); }
  function task(el) { return el.querySelector(".pp-task"); }
  function active(el) { var t = task(el); return (t && t.dataset.active) || "choice"; }
  function setActive(el, field) {
    var t = task(el);
    if (!t) return;
    t.dataset.active = field;
    Array.prototype.forEach.call(el.querySelectorAll(".pp-q"), function (fs) {
      fs.classList.toggle("active", fs.dataset.field === field);
    });
  }
  function nextOpen(el, after) {
    var start = ORDER.indexOf(after);
    for (var k = 1; k <= ORDER.length; k++) {
      var f = ORDER[(start + k) % ORDER.length];
      if (value(el, f) === null) return f;
    }
    return null;
  }
  function choose(el, field, v) {
    var r = radios(el, field).filter(function (x) { return x.value === v; })[0];
    if (!r) return false;
    r.checked = true;
    r.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }
  window.ArgoraHIT.register("pairwise_preference", {
    setup: function (el) {
      ORDER.forEach(function (field) {
        radios(el, field).forEach(function (r) {
          r.tabIndex = -1;
          r.addEventListener("change", function () {  // a click: highlight the next open question, if any
            var open = r.checked ? nextOpen(el, field) : null;
            if (open) setActive(el, open);
          });
        });
      });
      setActive(el, nextOpen(el, "fluent_right") || "choice");
    },
    isAnswered: answered,
    collect: function (el) {
      var out = {};
      var left = el.querySelector("input[type=hidden][name$='-left']");
      if (left) out.left = left.value;
      ORDER.forEach(function (field) { var v = value(el, field); if (v !== null) out[field] = v; });
      return out;
    },
    onKey: function (el, ev) {
      var field = active(el);
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        var i = ORDER.indexOf(field) + (ev.key === "ArrowRight" ? 1 : -1);
        setActive(el, ORDER[(i + ORDER.length) % ORDER.length]);
        return true;
      }
      var key = (ev.key || "").toLowerCase();
      var m = /^(?:Digit|Numpad)([1-3])$/.exec(ev.code || "");
      var digit = m ? parseInt(m[1], 10) : (/^[1-3]$/.test(ev.key) ? parseInt(ev.key, 10) : 0);
      var v = null;
      if (field === "choice") {
        if (digit) v = CHOICES.choice[digit - 1];
      } else if (key === "y" || digit === 1) {
        v = "yes";
      } else if (key === "n" || digit === 2) {
        v = "no";
      }
      if (!v) return false;
      var wasComplete = answered(el);
      if (!choose(el, field, v)) return false;
      var open = nextOpen(el, field);
      if (open) { setActive(el, open); return true; }
      if (wasComplete) return true;  // a correction: stay on this item
      setActive(el, "choice");
      return "answered";
    }
  });
})();
