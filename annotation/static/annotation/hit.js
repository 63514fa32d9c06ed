/* Argora HIT page: focus, keyboard, progress and submission shared by every task type.
 *
 * A task type's script registers itself with ArgoraHIT.register(name, impl) where impl has
 *   setup(itemEl)            once per item (e.g. make its inputs part of the item's single tab stop)
 *   isAnswered(itemEl)       -> bool
 *   collect(itemEl)          -> the response object for the item (sent as {"responses": {id: object}})
 *   onKey(itemEl, event)     -> "answered" (a choice was made: move on), true (handled) or false
 * Without JavaScript the page is a plain form POST, so this file only adds to it.
 */
(function () {
  "use strict";
  var taskTypes = {};
  window.ArgoraHIT = {
    register: function (name, impl) { taskTypes[name] = impl; }
  };

  var noop = {
    setup: function () {},
    isAnswered: function () { return true; },
    collect: function () { return {}; },
    onKey: function () { return false; }
  };

  function isTyping(el) {
    if (!el) return false;
    var tag = el.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" ||
      (tag === "INPUT" && !/^(radio|checkbox|button|submit)$/i.test(el.type));
  }

  function init() {
    var root = document.getElementById("hit");
    if (!root) return;
    var form = document.getElementById("hit-form");
    var impl = taskTypes[root.dataset.taskType] || noop;
    var items = Array.prototype.slice.call(root.querySelectorAll(".hit-item"));
    var submitBtn = document.getElementById("hit-submit");
    var submitBtns = Array.prototype.slice.call(document.querySelectorAll("button[type=submit][form=hit-form], #hit-submit"));
    var general = document.getElementById("hit-errors");
    var positionEl = document.getElementById("hit-position");
    var answeredEl = document.getElementById("hit-answered");
    var bar = document.getElementById("hit-progress");
    var instructions = document.getElementById("instructions");
    var started = Date.now();
    var current = 0;
    var busy = false;

    items.forEach(function (el) { impl.setup(el); });
    root.classList.add("js");

    function answeredCount() {
      return items.filter(function (el) { return impl.isAnswered(el); }).length;
    }

    function update() {
      var done = answeredCount();
      items.forEach(function (el, i) {
        el.classList.toggle("answered", impl.isAnswered(el));
        el.classList.toggle("current", i === current);
      });
      if (positionEl) positionEl.textContent = "Item " + (current + 1) + " of " + items.length;
      if (answeredEl) answeredEl.textContent = done + " of " + items.length + " answered";
      if (bar) { bar.max = items.length; bar.value = done; }
      submitBtns.forEach(function (b) { b.classList.toggle("ready", done === items.length); });
      var notice = document.getElementById("hit-missing");
      if (notice) {
        if (done === items.length) {
          notice.remove();
          if (general && !general.children.length) general.hidden = true;
        } else {
          notice.textContent = missingText(items.length - done);
        }
      }
    }

    function missingText(n) {
      return n === 1 ? "1 item still needs an answer." : n + " items still need an answer.";
    }

    function focusItem(i) {
      if (i < 0 || i >= items.length) return;
      current = i;
      items[i].focus();
      update();
    }

    function itemOf(el) {
      return el && el.closest ? el.closest(".hit-item") : null;
    }

    function setItemError(el, text) {
      var box = el.querySelector(".item-error");
      if (box) box.textContent = text || "";
      el.classList.toggle("has-error", !!text);
      if (text) el.setAttribute("aria-invalid", "true"); else el.removeAttribute("aria-invalid");
    }

    function clearErrors() {
      items.forEach(function (el) { setItemError(el, ""); });
      if (general) { general.textContent = ""; general.hidden = true; }
    }

    function showGeneral(text, id) {
      if (!general) return;
      var p = document.createElement("p");
      p.textContent = text;
      if (id) p.id = id;
      general.appendChild(p);
      general.hidden = false;
    }

    function itemForKey(key) {
      // Error keys name the item somewhere ("responses.12.label", "12", "item-12"): match a number on the page.
      var nums = String(key).match(/\d+/g) || [];
      for (var n = 0; n < nums.length; n++) {
        for (var i = 0; i < items.length; i++) {
          if (items[i].dataset.itemId === nums[n]) return items[i];
        }
      }
      return null;
    }

    function showErrors(errors) {
      var first = null;
      Object.keys(errors).forEach(function (key) {
        var reason = errors[key];
        if (Array.isArray(reason)) reason = reason.join(" ");
        else if (reason && typeof reason === "object") reason = JSON.stringify(reason);
        var el = itemForKey(key);
        if (el) {
          setItemError(el, reason);
          if (!first) first = el;
        } else {
          showGeneral(key + ": " + reason);
        }
      });
      if (first) focusItem(items.indexOf(first));
      else if (general) general.focus();
    }

    function firstUnanswered() {
      for (var i = 0; i < items.length; i++) if (!impl.isAnswered(items[i])) return i;
      return -1;
    }

    function clientSeconds() {
      return Math.round((Date.now() - started) / 100) / 10;
    }

    function submit() {
      if (busy) return;
      clearErrors();
      var missing = firstUnanswered();
      if (missing >= 0) {
        items.forEach(function (el) {
          if (!impl.isAnswered(el)) setItemError(el, "Please answer this item.");
        });
        showGeneral(missingText(items.length - answeredCount()), "hit-missing");
        focusItem(missing);
        return;
      }
      var responses = {};
      items.forEach(function (el) { responses[el.dataset.itemId] = impl.collect(el) || {}; });
      var feedback = form.elements.feedback ? form.elements.feedback.value : "";
      var csrf = form.elements.csrfmiddlewaretoken ? form.elements.csrfmiddlewaretoken.value : "";
      busy = true;
      submitBtns.forEach(function (b) { b.disabled = true; b.textContent = "Submitting…"; });
      fetch(root.dataset.submitUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ responses: responses, feedback: feedback, client_seconds: clientSeconds() })
      }).then(function (resp) {
        if (resp.status === 404 || resp.status === 405) {
          // No JSON endpoint here: fall back to the plain form POST.
          form.elements.client_seconds.value = clientSeconds();
          form.submit();
          return null;
        }
        return resp.json().catch(function () { return {}; }).then(function (data) {
          if (resp.ok) {
            window.location.assign(root.dataset.nextUrl);
            return;
          }
          if (data && data.errors) showErrors(data.errors);
          else showGeneral((data && data.detail) || ("The server answered " + resp.status + "."));
          done();
        });
      }).catch(function () {
        showGeneral("Could not reach the server. Your answers are still here; please try again.");
        done();
      });
      function done() {
        busy = false;
        submitBtns.forEach(function (b) { b.disabled = false; b.textContent = "Submit"; });
      }
    }

    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      submit();
    });

    root.addEventListener("focusin", function (ev) {
      var el = itemOf(ev.target);
      if (el) { current = items.indexOf(el); update(); }
    });

    root.addEventListener("change", function (ev) {
      var el = itemOf(ev.target);
      if (el) { setItemError(el, ""); current = items.indexOf(el); update(); }
    });

    document.addEventListener("keydown", function (ev) {
      if (ev.altKey || ev.ctrlKey && ev.key !== "Enter" || ev.metaKey) return;
      var target = ev.target;
      if (ev.key === "Enter") {
        if (ev.ctrlKey) { ev.preventDefault(); submit(); return; }
        if (isTyping(target) || target.tagName === "BUTTON" || target.tagName === "SUMMARY" || target.tagName === "A") return;
        ev.preventDefault();
        submit();
        return;
      }
      if (isTyping(target)) return;
      if (ev.key === "?") {
        if (instructions) instructions.open = !instructions.open;
        ev.preventDefault();
        return;
      }
      var el = itemOf(target);
      if (!el) return;
      var i = items.indexOf(el);
      if (ev.key === "ArrowDown" || ev.key === "j") { ev.preventDefault(); focusItem(Math.min(i + 1, items.length - 1)); return; }
      if (ev.key === "ArrowUp" || ev.key === "k") { ev.preventDefault(); focusItem(Math.max(i - 1, 0)); return; }
      var handled = impl.onKey(el, ev);
      if (handled) {
        ev.preventDefault();
        setItemError(el, "");
        if (handled === "answered") {
          if (i + 1 < items.length) focusItem(i + 1);
          else { update(); if (submitBtn) submitBtn.focus(); }
        } else {
          update();
        }
      }
    });

    update();
    var start = firstUnanswered();
    var firstError = root.querySelector(".hit-item.has-error");
    if (firstError) focusItem(items.indexOf(firstError));
    else focusItem(start >= 0 ? start : 0);
  }

  // Run after the task type's (deferred) script has registered itself: deferred scripts execute while
  // readyState is already "interactive", before DOMContentLoaded; "load" covers scripts added later.
  var booted = false;
  function start() { if (!booted) { booted = true; init(); } }
  if (document.readyState === "complete") start();
  else { document.addEventListener("DOMContentLoaded", start); window.addEventListener("load", start); }
})();
