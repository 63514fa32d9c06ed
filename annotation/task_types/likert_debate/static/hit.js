/* likert_debate: four criteria per debate, each rated 1-4. Keys on the focused item: 1-4 rate the highlighted
 * criterion and move the highlight to the next open one (style, content, strategy, overall); once all four are rated
 * focus moves on to the next debate. S / C / T / O or the left / right arrows pick a criterion; PgDn / PgUp (and
 * Space / Shift+Space) scroll the transcript. A change to a debate that was already complete stays on it.
 * The radios stay the single source of truth (the no-JS form posts them as item-<id>-<criterion>). */
(function () {
  "use strict";
  var ORDER = ["style", "content", "strategy", "overall"];
  var LETTERS = { s: "style", c: "content", t: "strategy", o: "overall" };
  function radios(el, field) {
    return Array.prototype.slice.call(el.querySelectorAll("input[type=radio][name$='-" + field + "']"));
  }
  function value(el, field) {
    var r = radios(el, field).filter(function (x) { return x.checked; })[0];
    return r ? parseInt(r.value, 10) : null;
  }
  function answered(el) { return ORDER.every(function (f) { return value(el, f) !== null; }); }
  function task(el) { return el.querySelector(".ld-task"); }
  function active(el) { var t = task(el); return (t && t.dataset.active) || "style"; }
  function setActive(el, field) {
    var t = task(el);
    if (!t) return;
    t.dataset.active = field;
    Array.prototype.forEach.call(el.querySelectorAll(".ld-q"), function (fs) {
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
  function choose(el, field, n) {
    var r = radios(el, field).filter(function (x) { return parseInt(x.value, 10) === n; })[0];
    if (!r) return false;
    r.checked = true;
    r.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }
  window.ArgoraHIT.register("likert_debate", {
    setup: function (el) {
      ORDER.forEach(function (field) {
        radios(el, field).forEach(function (r) {
          r.tabIndex = -1;
          r.addEventListener("change", function () {
            var open = r.checked ? nextOpen(el, field) : null;
            if (open) setActive(el, open);
          });
        });
      });
      setActive(el, nextOpen(el, "overall") || "style");
    },
    isAnswered: answered,
    collect: function (el) {
      var out = {};
      ORDER.forEach(function (field) { var v = value(el, field); if (v !== null) out[field] = v; });
      return out;
    },
    onKey: function (el, ev) {
      var box = el.querySelector(".ld-transcript");
      if (box && (ev.key === "PageDown" || ev.key === "PageUp" || ev.key === " ")) {
        var down = ev.key === "PageDown" || (ev.key === " " && !ev.shiftKey);
        box.scrollBy(0, (down ? 1 : -1) * Math.max(40, box.clientHeight - 40));
        return true;
      }
      var field = active(el);
      if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") {
        var i = ORDER.indexOf(field) + (ev.key === "ArrowRight" ? 1 : -1);
        setActive(el, ORDER[(i + ORDER.length) % ORDER.length]);
        return true;
      }
      var key = (ev.key || "").toLowerCase();
      if (!ev.shiftKey && LETTERS[key]) { setActive(el, LETTERS[key]); return true; }
      var m = /^(?:Digit|Numpad)([1-4])$/.exec(ev.code || "");
      var digit = m ? parseInt(m[1], 10) : (/^[1-4]$/.test(ev.key) ? parseInt(ev.key, 10) : 0);
      if (!digit) return false;
      var wasComplete = answered(el);
      if (!choose(el, field, digit)) return false;
      var open = nextOpen(el, field);
      if (open) { setActive(el, open); return true; }
      if (wasComplete) return true;  // a correction: stay on this debate
      setActive(el, "style");
      return "answered";
    }
  });
})();
