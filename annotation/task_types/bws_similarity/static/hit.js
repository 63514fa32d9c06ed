/* bws_similarity: mark the most and the least similar of four argument pairs.
 * Keys on the focused task: 1-4 = most similar pair, Shift+1-4 = least similar pair (physical digit keys, so any
 * layout works; the numpad digits pick "most" too). The same pair cannot be both: the choice is refused, the
 * previous one kept, and a warning shown (role=alert). The radios stay the single source of truth (no-JS form). */
(function () {
  "use strict";
  function radios(el, field) {
    return Array.prototype.slice.call(el.querySelectorAll("input[type=radio][name$='-" + field + "']"));
  }
  function value(el, field) {
    var r = radios(el, field).filter(function (x) { return x.checked; })[0];
    return r ? r.value : null;
  }
  function pairNumber(el, id) {
    var ids = radios(el, "best").map(function (r) { return r.value; });
    return ids.indexOf(id) + 1;
  }
  function warn(el, text) {
    var box = el.querySelector(".bws-warning");
    if (box) box.textContent = text || "";
  }
  function conflictText(el, field, id) {
    var n = pairNumber(el, id);
    return field === "worst"
      ? "Pair " + n + " is already your most similar pair: the least similar pair must be a different one."
      : "Pair " + n + " is already your least similar pair: the most similar pair must be a different one.";
  }
  function set(el, field, index) {
    var rs = radios(el, field);
    if (index < 0 || index >= rs.length) return false;
    var other = value(el, field === "best" ? "worst" : "best");
    if (other !== null && other === rs[index].value) {
      warn(el, conflictText(el, field, rs[index].value));
      return "refused";
    }
    warn(el, "");
    rs[index].checked = true;
    rs[index].dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }
  function answered(el) {
    var b = value(el, "best"), w = value(el, "worst");
    return b !== null && w !== null && b !== w;
  }
  window.ArgoraHIT.register("bws_similarity", {
    setup: function (el) {
      var last = { best: value(el, "best"), worst: value(el, "worst") };
      ["best", "worst"].forEach(function (field) {
        radios(el, field).forEach(function (r) {
          r.tabIndex = -1;
          r.addEventListener("change", function () {
            var other = value(el, field === "best" ? "worst" : "best");
            if (r.checked && other === r.value) {  // a click on the pair already chosen for the other end
              r.checked = false;
              var prev = radios(el, field).filter(function (x) { return x.value === last[field]; })[0];
              if (prev) prev.checked = true;
              warn(el, conflictText(el, field, r.value));
              return;
            }
            if (r.checked) { last[field] = r.value; warn(el, ""); }
          });
        });
      });
    },
    isAnswered: answered,
    collect: function (el) {
      var out = {}, b = value(el, "best"), w = value(el, "worst");
      if (b !== null) out.best = b;
      if (w !== null) out.worst = w;
      return out;
    },
    onKey: function (el, ev) {
      var m = /^(?:Digit|Numpad)([1-9])$/.exec(ev.code || "");
      var digit = m ? parseInt(m[1], 10) : (/^[1-9]$/.test(ev.key) ? parseInt(ev.key, 10) : 0);
      if (!digit) return false;
      var field = ev.shiftKey ? "worst" : "best";
      var done = set(el, field, digit - 1);
      if (done === "refused") return true;
      if (!done) return false;
      return answered(el) ? "answered" : true;
    }
  });
})();
