/* sentence_label: one label per sentence. Keys 1..n pick the n-th label of the focused item;
 * ←/→ move the choice; the item is a single tab stop (its radios are reached through it). */
(function () {
  "use strict";
  function radios(el) { return Array.prototype.slice.call(el.querySelectorAll("input[type=radio]")); }
  function checkedIndex(el) {
    var rs = radios(el);
    for (var i = 0; i < rs.length; i++) if (rs[i].checked) return i;
    return -1;
  }
  function choose(el, i) {
    var rs = radios(el);
    if (i < 0 || i >= rs.length) return false;
    rs[i].checked = true;
    rs[i].dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }
  window.ArgoraHIT.register("sentence_label", {
    setup: function (el) {
      radios(el).forEach(function (r) { r.tabIndex = -1; });
    },
    isAnswered: function (el) { return checkedIndex(el) >= 0; },
    collect: function (el) {
      var i = checkedIndex(el);
      return i >= 0 ? { label: radios(el)[i].value } : {};
    },
    onKey: function (el, ev) {
      if (/^[1-9]$/.test(ev.key)) {
        return choose(el, parseInt(ev.key, 10) - 1) ? "answered" : false;
      }
      var n = radios(el).length, i = checkedIndex(el);
      if (ev.key === "ArrowRight" || ev.key === "l") return choose(el, i < 0 ? 0 : (i + 1) % n);
      if (ev.key === "ArrowLeft" || ev.key === "h") return choose(el, i < 0 ? n - 1 : (i - 1 + n) % n);
      if (ev.key === " " && ev.target === el) return choose(el, i < 0 ? 0 : i);
      return false;
    }
  });
})();
