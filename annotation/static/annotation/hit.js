/* Argora HIT page: focus, keyboard, progress and submission shared by every task type.
 *
 * A task type's script registers itself with ArgoraHIT.register(name, impl) where impl has
 *   setup(itemEl)            once per item (e.g. make its inputs part of the item's single tab stop)
 *   isAnswered(itemEl)       -> bool
 *   collect(itemEl)          -> the response object for the item (sent as {"responses": {id: object}})
 *   onKey(itemEl, event)     -> "answered" (a choice was made: move on), true (handled) or false
 * Without JavaScript the page is a plain form POST, so this file only adds to it.
 *
 * Nothing a worker gives is lost: the form's item fields (item-<id>-<field>, which every task type keeps in step with
 * what is on screen) and the feedback are saved as a draft on the server as they change (debounced, one request at
 * a time, and once more when the page is hidden), and the server puts them back into the page when it is opened
 * again (drafts.js, which the page loads first, does the saving). The reservation's deadline counts down in the side
 * panel; near it, and after it, "Keep this HIT longer" asks for more time while the HIT's place is still free.
 * Answers sent after the deadline are kept as late answers (the server says "late"): the page says so and offers the
 * next HIT.
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
    var drafts = setupDrafts(root, form);
    var timer = setupTimer(root);
    setupStop(function () { return answeredCount(); });

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
      drafts.changed();
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
            drafts.stop();
            if (data && data.status === "late") { showLate(); return; }
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

    function showLate() {
      var late = document.getElementById("hit-late");
      form.hidden = true;
      ["hit-expiry", "hit-timer", "hit-saved"].forEach(function (id) {
        var el = document.getElementById(id);
        if (el) el.hidden = true;
      });
      timer.stop();
      submitBtns.forEach(function (b) { b.disabled = true; b.textContent = "Sent as late answers"; });
      if (late) { late.hidden = false; late.focus(); }
    }

    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      submit();
    });

    root.addEventListener("input", function () { drafts.changed(); });

    // A press (the mouse, or a finger's tap: its compatibility mouse events) that focuses another item moves the
    // highlight only once released: the highlighted item shows its key hints and the others hide theirs, and a
    // layout that moved under the pointer between press and release would send the click elsewhere (a tapped
    // choice of the next item would not be chosen).
    var pressing = false, pending = false;
    root.addEventListener("mousedown", function () { pressing = true; }, true);
    document.addEventListener("mouseup", function () {
      pressing = false;
      if (pending) { pending = false; update(); }
    }, true);
    root.addEventListener("focusin", function (ev) {
      var el = itemOf(ev.target);
      if (!el) return;
      current = items.indexOf(el);
      if (pressing) pending = true; else update();
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

  // --- drafts: the answers given so far, saved on the server -------------------------------------------------
  function formFields(form) {
    // the HIT form's item fields as the server reads them: {item id: {field: text, list field: [texts]}}
    var out = {};
    new FormData(form).forEach(function (value, name) {
      var m = /^item-(\d+)-(.+)$/.exec(name);
      if (!m || typeof value !== "string") return;
      var item = out[m[1]] || (out[m[1]] = {});
      var field = m[2];
      if (/\[\]$/.test(field)) {
        field = field.slice(0, -2);
        (item[field] || (item[field] = [])).push(value);
      } else {
        item[field] = value;
      }
    });
    return out;
  }

  function setupDrafts(root, form) {
    return window.ArgoraDrafts.saver({
      url: root.dataset.draftUrl, status: document.getElementById("hit-saved"),
      csrf: form.elements.csrfmiddlewaretoken ? form.elements.csrfmiddlewaretoken.value : "",
      skewMs: parseInt(root.dataset.serverNowMs || "", 10) - Date.now(),
      state: function () {
        return { fields: formFields(form), feedback: form.elements.feedback ? form.elements.feedback.value : "" };
      }
    });
  }

  // --- the reservation's deadline ---------------------------------------------------------------------------
  function clock(ms) {
    var s = Math.max(0, Math.round(ms / 1000)), m = Math.floor(s / 60);
    return m >= 60 ? Math.floor(m / 60) + " h " + (m % 60) + " min" : m + ":" + ("0" + (s % 60)).slice(-2);
  }

  function setupTimer(root) {
    var timerEl = document.getElementById("hit-timer");
    var box = document.getElementById("hit-expiry");
    var text = document.getElementById("hit-expiry-text");
    var button = document.getElementById("hit-extend");
    var expires = parseInt(root.dataset.expiresMs || "", 10);
    var ticking = null;
    var handle = { stop: function () { clearInterval(ticking); } };
    if (!timerEl || isNaN(expires)) return handle;
    var skew = parseInt(root.dataset.serverNowMs || "", 10) - Date.now();  // server clock - this clock
    if (isNaN(skew)) skew = 0;
    var timeout = parseInt(root.dataset.timeout || "0", 10) * 1000;
    var warnAt = Math.max(60000, Math.min(300000, timeout / 4));
    var note = "";

    function tick() {
      var left = expires - (Date.now() + skew);
      timerEl.textContent = left > 0 ? "Reserved for you: " + clock(left) + " left" : "Your reservation has ended";
      timerEl.classList.toggle("warn", left > 0 && left <= warnAt);
      timerEl.classList.toggle("over", left <= 0);
      if (!box) return;
      box.hidden = left > warnAt && !note;
      box.classList.toggle("over", left <= 0);
      text.textContent = note || (left > 0
        ? "Your reservation ends in " + clock(left) + ". Submit before then, or keep this HIT longer."
        : "Your reservation has ended and another worker may take this HIT. Submit now: your answers are kept " +
          "(as late answers if your place was taken). Or keep the HIT, if its place is still free.");
    }
    if (button) {
      button.addEventListener("click", function () {
        var csrf = document.querySelector("input[name=csrfmiddlewaretoken]");
        button.disabled = true;
        fetch(root.dataset.extendUrl, {
          method: "POST", credentials: "same-origin",
          headers: { "Accept": "application/json", "X-CSRFToken": csrf ? csrf.value : "" }
        }).then(function (resp) {
          return resp.json().catch(function () { return {}; }).then(function (data) {
            if (resp.ok && data.expires_at) {
              expires = Date.parse(data.expires_at);
              note = "";
              box.hidden = true;
            } else {
              note = (data && data.detail) ? data.detail.charAt(0).toUpperCase() + data.detail.slice(1) + "."
                                           : "The server answered " + resp.status + ".";
              button.hidden = true;
            }
          });
        }).catch(function () {
          note = "Could not reach the server; please try again.";
        }).then(function () { button.disabled = false; tick(); });
      });
    }
    tick();
    ticking = setInterval(tick, 1000);
    return handle;
  }

  // --- "Stop and get my completion code" -------------------------------------------------------------------
  function setupStop(answered) {
    var stop = document.getElementById("hit-stop");
    if (!stop) return;
    stop.addEventListener("submit", function (ev) {
      var n = answered();
      if (n && !window.confirm("Stop now? The " + n + " answer" + (n === 1 ? "" : "s") + " you gave in this HIT " +
                               "will not be sent, and the HIT goes back to other workers.")) {
        ev.preventDefault();
      }
    });
  }

  // Run after the task type's (deferred) script has registered itself: deferred scripts execute while
  // readyState is already "interactive", before DOMContentLoaded; "load" covers scripts added later.
  var booted = false;
  function start() { if (!booted) { booted = true; init(); } }
  if (document.readyState === "complete") start();
  else { document.addEventListener("DOMContentLoaded", start); window.addEventListener("load", start); }
})();
