/* aspect: choose the aspects of each sentence from ranked candidate lists (arg-ctrl §3.1, App. A).
 *
 * The hidden checkboxes item-<id>-aspects[] ("begin:length" ids) of the plain form are the state; this script
 * puts a type-ahead tag field on top of them:
 *   typing filters the candidates (a candidate typed in full, whatever its case, is highlighted before the ones
 *   that merely contain the text), ArrowUp/ArrowDown move, Enter or Tab pick (the list closes then, and when the
 *   field loses focus), Escape closes the list,
 *   Backspace in the empty field removes the last chosen aspect, Alt+M (or the button, or the last entry
 *   of the list) shows the second list; candidates from both lists are offered from then on.
 * Chosen aspects are chips and marks in the sentence; an aspect overlapping a chosen one is refused with a
 * warning (role=alert). The server checks all of it again.
 * The item itself is not a tab stop: focusing it (hit.js does, on load and on errors) moves focus into its
 * field, so a worker can type at once; Tab walks field -> button -> boxes -> next sentence (-> submit). The open list
 * is never a tab stop (tabindex -1: a scrollable box would be one, and the field's blur hides it, which dropped
 * focus to <body>); a Tab that picks nothing closes it first.
 * hit.js ignores keys typed into text inputs (no digit shortcuts, no Enter-to-submit there); the field
 * keeps Enter from submitting the form while something is typed or highlighted.
 *
 * Free spans (project config free_spans; the sentence then carries data-tokens, the [begin, end) offsets of its
 * tokens): the annotator may mark any words, not only candidates.
 *   mouse: select words in the sentence (drag, or double-click a word); on mouseup the selection snaps to whole
 *     words and becomes an aspect. A click puts the word cursor on a word, Shift+click extends it, and the
 *     "Add selected span" button adds the words under the cursor.
 *   touch: a tap puts the word cursor on a word, a tap on another word extends it to there (touch has no Shift),
 *     and the "Add selected span" button adds the words under the cursor.
 *   keyboard: the sentence is a tab stop; ArrowLeft/ArrowRight move the word cursor, Shift+ArrowLeft/Right
 *     (and Shift+Home/End) extend it, Enter adds the words under it, Delete/Backspace removes the aspect under
 *     it, Escape shrinks it to one word.
 * A free span that is an offered candidate counts as that candidate; any other is "free" (chip, mark) and has a
 * hidden input item-<id>-aspects[] of its own (enabled while chosen), so the page's draft and the plain form POST
 * carry it; the server renders the free spans of a restored draft as such inputs. Overlaps are refused with the
 * same warning as in the field.
 */
(function () {
  "use strict";
  var states = new WeakMap();
  var DIGITS = /^[0-9]+$/;

  function $(el, sel) { return el.querySelector(sel); }
  function $$(el, sel) { return Array.prototype.slice.call(el.querySelectorAll(sel)); }
  function q(text) { return "\u201c" + text + "\u201d"; }
  function overlaps(a, b) { return a.begin < b.begin + b.length && b.begin < a.begin + a.length; }
  function norm(text) { return text.trim().toLowerCase().replace(/\s+/g, " "); }

  function setup(el) {
    var widget = $(el, ".aspect-widget");
    if (!widget) return;
    var iid = el.dataset.itemId;
    var sentence = $(el, ".aspect-sentence");
    var st = {
      el: el, chars: Array.from(sentence.textContent), cands: {}, keys: [], order: [], revealed: false,
      active: -1, options: [], open: false,
      sentence: sentence, widget: widget, field: $(el, ".aspect-field"), chips: $(el, ".aspect-chips"),
      input: $(el, ".aspect-input"), listbox: $(el, ".aspect-listbox"), warning: $(el, ".aspect-warning"),
      more: $(el, ".aspect-more"), details: $(el, ".aspect-second"),
      noAspect: $(el, 'input[name="item-' + iid + '-no_aspect"]'),
      notInList: $(el, 'input[name="item-' + iid + '-not_in_lists"]'),
      answer: $(el, 'input[name="item-' + iid + '-check"]')
    };
    states.set(el, st);
    if (sentence.dataset.tokens) {
      try { st.tokens = JSON.parse(sentence.dataset.tokens); } catch (e) { st.tokens = null; }
      st.free = !!(st.tokens && st.tokens.length);
    }
    $$(el, 'input[type=checkbox][name="item-' + iid + '-aspects[]"]').forEach(function (cb, rank) {
      var parts = cb.value.split(/[:,]/);
      var key = cb.value;
      if (st.cands[key]) return;
      var begin = parseInt(parts[0], 10), length = parseInt(parts[1], 10);
      var text = cb.dataset.text || st.chars.slice(begin, begin + length).join("");
      st.cands[key] = { key: key, begin: begin, length: length, text: text, lower: text.toLowerCase(),
                        norm: norm(text), list: cb.dataset.list || "first", cb: cb, rank: rank };
      st.keys.push(key);
      if (cb.checked) st.order.push(key);
      cb.tabIndex = -1;
    });
    // Free spans chosen before (a reload restores them from the draft): hidden inputs of the same field.
    $$(el, 'input.aspect-free-input').forEach(function (input) {
      var parts = input.value.split(":"), begin = parseInt(parts[0], 10), length = parseInt(parts[1], 10);
      if (isNaN(begin) || isNaN(length) || begin < 0 || begin + length > st.chars.length) { input.remove(); return; }
      var c = freeCand(st, begin, length, input);
      if (st.order.indexOf(c.key) < 0) st.order.push(c.key);
    });
    // The same words twice in one sentence: show where each one is.
    var seen = {};
    st.keys.forEach(function (k) { var t = st.cands[k].lower; seen[t] = (seen[t] || 0) + 1; });
    st.keys.forEach(function (k) { st.cands[k].ambiguous = seen[st.cands[k].lower] > 1; });
    if (st.order.some(function (k) { return st.cands[k].list === "second"; })) st.revealed = true;

    el.tabIndex = -1;
    st.listbox.tabIndex = -1; // a scrollable list is a tab stop in Chromium: never one here
    widget.hidden = false;
    if (st.more) st.more.hidden = !st.keys.some(function (k) { return st.cands[k].list === "second"; });
    if (st.details) st.details.open = false;

    el.addEventListener("focus", function (ev) {
      if (ev.target === el) st.input.focus();
    });
    st.field.addEventListener("mousedown", function (ev) {
      if (ev.target === st.field || ev.target.classList.contains("aspect-field-label")) { ev.preventDefault(); st.input.focus(); }
    });
    // The list opens on typing, ArrowDown or a click, not on focus: tabbing through the page (or hit.js
    // focusing an item with an error) must not cover the boxes and messages below the field.
    st.input.addEventListener("click", function () { if (!st.open) openList(st); });
    st.input.addEventListener("blur", function () { closeList(st); });
    st.input.addEventListener("input", function () {
      if (st.warning.dataset.kind === "refused") warn(st, ""); // read (and announced): typing on clears it
      st.active = st.input.value.trim() ? 0 : -1;
      st.preferExact = true; // highlight the candidate typed in full, if there is one
      openList(st);
    });
    st.input.addEventListener("keydown", function (ev) { inputKey(st, ev); });
    st.listbox.addEventListener("mousedown", function (ev) { ev.preventDefault(); });
    st.listbox.addEventListener("click", function (ev) {
      var li = ev.target.closest("li[role=option]");
      if (li) activate(st, parseInt(li.dataset.index, 10));
    });
    st.chips.addEventListener("mousedown", function (ev) { if (ev.target.closest("button")) ev.preventDefault(); });
    st.chips.addEventListener("click", function (ev) {
      var b = ev.target.closest("button[data-key]");
      if (b) { remove(st, b.dataset.key); st.input.focus(); }
    });
    if (st.more) st.more.addEventListener("click", function () { reveal(st, true); });
    el.addEventListener("keydown", function (ev) {
      // Alt+M anywhere in the item (hit.js leaves Alt combinations alone).
      if (ev.altKey && !ev.ctrlKey && !ev.metaKey && (ev.code === "KeyM" || ev.key === "m" || ev.key === "M")) {
        ev.preventDefault();
        ev.stopPropagation();
        reveal(st, true);
      }
    });
    [st.noAspect, st.notInList].forEach(function (box) {
      if (box) box.addEventListener("change", function () { boxChanged(st, box); });
    });
    if (st.free) setupFree(st);
    var a = st.answer;
    if (a) {
      a.addEventListener("input", function () {
        var clean = a.value.replace(/[^0-9]+/g, "");
        if (clean !== a.value) {
          a.value = clean;
          warn(st, "Please type digits only, e.g. 7.");
          st.warning.dataset.kind = "digits";
        } else if (st.warning.dataset.kind === "digits") {
          warn(st, "");
        }
        // let hit.js recount the answered items while the worker types (it listens to "change")
        a.dispatchEvent(new Event("change", { bubbles: true }));
      });
    }
    render(st);
  }

  // --- the list -------------------------------------------------------------------------------------
  function chosen(st) { return st.order.map(function (k) { return st.cands[k]; }); }

  function overlapping(st, c) {
    var hit = null;
    chosen(st).forEach(function (o) { if (!hit && o.key !== c.key && overlaps(o, c)) hit = o; });
    return hit;
  }

  function buildOptions(st) {
    var text = st.input.value.trim().toLowerCase(), exact = norm(text);
    var taken = {};
    st.order.forEach(function (k) { taken[k] = true; });
    function matches(list) {
      var out = st.keys.filter(function (k) {
        var c = st.cands[k];
        return c.list === list && !taken[k] && (!text || c.lower.indexOf(text) >= 0);
      }).map(function (k) { return st.cands[k]; });
      if (list === "second") out.sort(function (a, b) { return a.begin - b.begin || a.length - b.length; });
      // the candidate typed in full comes first in its list (a stable sort keeps the rest in their order)
      if (exact) out = out.filter(function (c) { return c.norm === exact; })
                          .concat(out.filter(function (c) { return c.norm !== exact; }));
      return out;
    }
    var opts = [];
    var first = matches("first");
    var second = st.revealed ? matches("second") : [];
    if (st.revealed && first.length) opts.push({ type: "group", label: "Suggested aspects" });
    first.forEach(function (c) { opts.push({ type: "cand", cand: c }); });
    if (st.revealed) {
      if (second.length) opts.push({ type: "group", label: "More candidates (second list)" });
      second.forEach(function (c) { opts.push({ type: "cand", cand: c }); });
      if (!first.length && !second.length) {
        opts.push({ type: "empty", label: text ? "No candidate contains " + q(text) + ". If the aspect is in no list, tick the box below."
                                               : "Every candidate is chosen." });
      }
    } else {
      if (!first.length) opts.push({ type: "empty", label: text ? "No match in the first list." : "Every suggested aspect is chosen." });
      if (st.keys.some(function (k) { return st.cands[k].list === "second"; })) {
        opts.push({ type: "more", label: "Aspect not in the first list, show more candidates (Alt+M)" });
      }
    }
    return opts;
  }

  function selectable(o) { return o.type === "cand" || o.type === "more"; }

  function openList(st) {
    st.options = buildOptions(st);
    var idx = selectableIndexes(st);
    if (st.active >= 0) {
      // keep a highlight on something selectable: the first one after typing
      st.active = idx.length ? idx[Math.min(idx.indexOf(st.active) >= 0 ? idx.indexOf(st.active) : 0, idx.length - 1)] : -1;
    }
    if (st.preferExact) {
      // after typing: a candidate typed in full (any case, either list) wins over those that only contain the text
      st.preferExact = false;
      var typed = norm(st.input.value), cur = st.options[st.active];
      if (typed && !(cur && cur.type === "cand" && cur.cand.norm === typed)) {
        for (var i = 0; i < st.options.length; i++) {
          if (st.options[i].type === "cand" && st.options[i].cand.norm === typed) { st.active = i; break; }
        }
      }
    }
    st.open = true;
    drawList(st);
  }

  function closeList(st) {
    st.open = false;
    st.listbox.hidden = true;
    st.input.setAttribute("aria-expanded", "false");
    st.input.removeAttribute("aria-activedescendant");
  }

  function selectableIndexes(st) {
    var out = [];
    st.options.forEach(function (o, i) { if (selectable(o)) out.push(i); });
    return out;
  }

  function drawList(st) {
    var lb = st.listbox;
    lb.textContent = "";
    var text = st.input.value.trim().toLowerCase();
    var iid = st.el.dataset.itemId;
    st.options.forEach(function (o, i) {
      var li = document.createElement("li");
      if (o.type === "cand") {
        var c = o.cand;
        li.setAttribute("role", "option");
        li.dataset.index = i;
        li.dataset.key = c.key;
        li.id = "item-" + iid + "-opt-" + i;
        appendMatch(li, c.text, text);
        if (c.ambiguous) addNote(li, "\u2026" + context(st, c) + "\u2026");
        var o2 = overlapping(st, c);
        if (o2) { li.classList.add("overlaps"); addNote(li, "overlaps " + q(o2.text)); }
        if (c.list === "second") li.classList.add("second");
      } else if (o.type === "more") {
        li.setAttribute("role", "option");
        li.dataset.index = i;
        li.id = "item-" + iid + "-opt-" + i;
        li.className = "action";
        li.textContent = o.label;
      } else {
        li.setAttribute("role", "presentation");
        li.className = o.type;
        li.textContent = o.label;
      }
      if (i === st.active) li.setAttribute("aria-selected", "true");
      lb.appendChild(li);
    });
    lb.hidden = !st.open || !st.options.length;
    st.input.setAttribute("aria-expanded", lb.hidden ? "false" : "true");
    var act = st.active >= 0 ? lb.children[st.active] : null;
    if (act && !lb.hidden) {
      st.input.setAttribute("aria-activedescendant", act.id);
      act.scrollIntoView({ block: "nearest" });
    } else {
      st.input.removeAttribute("aria-activedescendant");
      if (!lb.hidden) lb.scrollTop = 0;
    }
  }

  function appendMatch(li, label, text) {
    var at = text ? label.toLowerCase().indexOf(text) : -1;
    if (at < 0) { li.appendChild(document.createTextNode(label)); return; }
    li.appendChild(document.createTextNode(label.slice(0, at)));
    var b = document.createElement("b");
    b.textContent = label.slice(at, at + text.length);
    li.appendChild(b);
    li.appendChild(document.createTextNode(label.slice(at + text.length)));
  }

  function addNote(li, text) {
    var s = document.createElement("span");
    s.className = "note";
    s.textContent = text;
    li.appendChild(s);
  }

  function context(st, c) {
    var from = Math.max(0, c.begin - 18), to = Math.min(st.chars.length, c.begin + c.length + 18);
    return st.chars.slice(from, to).join("").trim();
  }

  function move(st, delta) {
    var idx = selectableIndexes(st);
    if (!idx.length) return;
    var pos = idx.indexOf(st.active);
    if (pos < 0) pos = delta > 0 ? 0 : idx.length - 1;
    else pos = Math.max(-1, Math.min(idx.length - 1, pos + delta));
    st.active = pos < 0 ? -1 : idx[pos];
    drawList(st);
  }

  function activate(st, i) {
    var o = st.options[i];
    if (!o) return false;
    if (o.type === "more") { reveal(st, true); return true; }
    if (o.type === "cand") { pick(st, o.cand.key); return true; }
    return false;
  }

  function inputKey(st, ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return; // Ctrl+Enter submits (hit.js); Alt+M is the item's
    var typed = st.input.value.trim() !== "";
    switch (ev.key) {
      case "ArrowDown":
        ev.preventDefault();
        if (!st.open) { st.active = -1; openList(st); }
        move(st, 1);
        return;
      case "ArrowUp":
        ev.preventDefault();
        if (!st.open) { st.active = -1; openList(st); }
        move(st, -1);
        return;
      case "Enter":
        if (st.open && st.active >= 0) { ev.preventDefault(); activate(st, st.active); return; }
        if (typed) ev.preventDefault(); // never submit the HIT with half a word in the field
        return;                         // an empty field: Enter submits the form like elsewhere on the page
      case "Tab":
        if (!ev.shiftKey && st.open && st.active >= 0 && (typed || st.options[st.active].type === "cand")) {
          ev.preventDefault();
          activate(st, st.active);
          return;
        }
        closeList(st); // nothing to pick: the browser moves focus on, to the next control (never into the list)
        return;
      case "Backspace":
        if (!st.input.value && st.order.length) {
          ev.preventDefault();
          remove(st, st.order[st.order.length - 1]);
        }
        return;
      case "Escape":
        if (st.open && !st.listbox.hidden) { ev.preventDefault(); closeList(st); }
        else if (st.input.value) { ev.preventDefault(); st.input.value = ""; }
        return;
    }
  }

  // --- choosing ---------------------------------------------------------------------------------------
  function warn(st, text, flashKey) {
    st.warning.textContent = text || "";
    st.warning.dataset.kind = "";
    st.flashKey = flashKey || null; // render() keeps the flash on a redrawn mark
    $$(st.sentence, "mark.flash").forEach(function (m) { m.classList.remove("flash"); });
    if (flashKey) {
      var m = st.sentence.querySelector('mark[data-key="' + flashKey + '"]');
      if (m) m.classList.add("flash");
    }
  }

  function refuse(st, text, flashKey) {
    // close the list, so that it does not cover the warning; the next keystroke in the field clears it
    warn(st, text, flashKey);
    st.warning.dataset.kind = "refused";
    closeList(st);
  }

  function changed(st, target) {
    (target || st.input).dispatchEvent(new Event("change", { bubbles: true }));
  }

  function pick(st, key, fromSentence) {
    var c = st.cands[key];
    if (!c) return false;
    if (st.noAspect && st.noAspect.checked) {
      refuse(st, "You ticked \u201cNo aspect in the sentence\u201d. Untick it before choosing aspects.");
      return false;
    }
    var o = overlapping(st, c);
    if (o) {
      refuse(st, q(c.text) + " overlaps your aspect " + q(o.text) + ": aspects must not overlap. To take " + q(c.text) +
                 " instead, first remove " + q(o.text) + " (Backspace in the empty field" +
                 (st.free ? ", or Delete in the sentence" : "") + ").", o.key);
      return false;
    }
    if (st.order.indexOf(key) < 0) st.order.push(key);
    if (c.cb) c.cb.checked = true;
    if (c.input) c.input.disabled = false;
    warn(st, "");
    if (!fromSentence) st.input.value = "";
    st.active = -1;
    render(st);
    closeList(st); // picked: the list closes (it would cover the next sentence); typing, ArrowDown or a tap reopens it
    changed(st, c.cb);
    return true;
  }

  function remove(st, key) {
    var i = st.order.indexOf(key);
    if (i < 0) return;
    st.order.splice(i, 1);
    if (st.cands[key] && st.cands[key].cb) st.cands[key].cb.checked = false;
    if (st.cands[key] && st.cands[key].input) st.cands[key].input.disabled = true;
    warn(st, "");
    render(st);
    if (st.open) openList(st);
    changed(st, st.cands[key] ? st.cands[key].cb : null);
  }

  function reveal(st, focus) {
    st.revealed = true;
    if (st.more) {
      st.more.setAttribute("aria-pressed", "true");
      st.more.firstChild.textContent = "More candidates shown (second list) ";
    }
    if (st.active >= 0 && st.options[st.active] && st.options[st.active].type === "more") st.active = -1;
    if (st.input.value.trim()) { st.active = 0; st.preferExact = true; } // the typed text may now match in full
    if (focus) st.input.focus();
    openList(st);
  }

  function boxChanged(st, box) {
    var other = box === st.noAspect ? st.notInList : st.noAspect;
    if (box.checked && box === st.noAspect && st.order.length) {
      box.checked = false;
      warn(st, "You chose aspects for this sentence, so it does not contain \u201cno aspect\u201d. Remove them first (Backspace in the field).");
    } else if (box.checked && other && other.checked) {
      box.checked = false;
      warn(st, "\u201cNo aspect\u201d and \u201caspects not in any list\u201d exclude each other; untick the other box first.");
    } else {
      warn(st, "");
      if (box.checked && st.answer && !DIGITS.test(st.answer.value)) {
        // the sum appears with the tick (CSS); go there, so the keyboard flow is Space, digits
        setTimeout(function () { st.answer.focus(); }, 0);
      }
    }
    render(st);
  }

  // --- drawing ----------------------------------------------------------------------------------------
  function render(st) {
    // chips, in the order chosen
    st.chips.textContent = "";
    chosen(st).forEach(function (c) {
      var li = document.createElement("li");
      li.className = "aspect-chip" + (c.list === "second" ? " second" : c.list === "free" ? " free" : "");
      li.dataset.key = c.key;
      li.appendChild(document.createTextNode(c.text));
      var b = document.createElement("button");
      b.type = "button";
      b.tabIndex = -1;
      b.dataset.key = c.key;
      b.setAttribute("aria-label", "Remove aspect " + c.text);
      b.textContent = "\u00d7";
      li.appendChild(b);
      st.chips.appendChild(li);
    });
    // marks in the sentence, in text order
    var spans = chosen(st).slice().sort(function (a, b) { return a.begin - b.begin; });
    var s = st.sentence, at = 0;
    if (st.free) {
      renderFree(st, spans);
    } else if (st.chars.length) {
      s.textContent = "";
      spans.forEach(function (c) {
        if (c.begin < at) return; // cannot happen: overlaps are refused
        s.appendChild(document.createTextNode(st.chars.slice(at, c.begin).join("")));
        var m = document.createElement("mark");
        m.dataset.key = c.key;
        if (c.list === "second") m.className = "second";
        if (c.key === st.flashKey) m.classList.add("flash");
        m.textContent = st.chars.slice(c.begin, c.begin + c.length).join("");
        s.appendChild(m);
        at = c.begin + c.length;
      });
      s.appendChild(document.createTextNode(st.chars.slice(at).join("")));
    }
    st.input.placeholder = st.order.length ? "add another aspect (\u2193 lists them)" : "type to find an aspect (\u2193 lists them)";
    var na = st.noAspect && st.noAspect.checked;
    st.field.classList.toggle("disabled", !!na);
    if (st.more) {
      st.more.setAttribute("aria-pressed", st.revealed ? "true" : "false");
      if (st.revealed) st.more.firstChild.textContent = "More candidates shown (second list) ";
    }
    st.el.classList.toggle("aspect-none", !!na);
  }

  // --- free spans: words selected in the sentence ---------------------------------------------------------
  function setupFree(st) {
    var s = st.sentence, iid = st.el.dataset.itemId;
    st.cursor = null;            // {anchor, focus}: token indexes; the words from min to max are "selected"
    st.addBtn = $(st.el, ".aspect-add");
    st.status = $(st.el, ".aspect-cursor-status");
    s.tabIndex = 0;
    s.setAttribute("aria-describedby", "item-" + iid + "-freehelp");
    s.setAttribute("aria-keyshortcuts", "ArrowLeft ArrowRight Shift+ArrowLeft Shift+ArrowRight Enter Delete");
    s.addEventListener("focus", function () {
      // not while the mouse is down: redrawing the sentence now would drop the selection being started
      if (!st.cursor && !st.mouse) { setCursor(st, 0, 0); render(st); }
    });
    s.addEventListener("keydown", function (ev) { freeKey(st, ev); });
    // a finger's tap arrives as pointerdown (pointerType "touch"), then the compatibility mouse events
    s.addEventListener("pointerdown", function (ev) { st.touch = ev.pointerType === "touch"; });
    s.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0) return;
      st.mouse = { shift: ev.shiftKey };
      if (ev.shiftKey && st.cursor) ev.preventDefault(); // Shift+click extends the word cursor, not the text selection
      if (document.activeElement !== s) s.focus({ preventScroll: true });
    });
    document.addEventListener("mouseup", function (ev) {
      if (!st.mouse) return;
      var shift = st.mouse.shift;
      st.mouse = null;
      freeMouseUp(st, ev, shift);
    });
    if (st.addBtn) {
      st.addBtn.addEventListener("click", function () {
        st.touchAnchor = null;
        if (st.cursor) addCursor(st);
        s.focus({ preventScroll: true });
      });
    }
  }

  function nTokens(st) { return st.tokens.length; }
  function cursorRange(st) {
    if (!st.cursor) return null;
    return { lo: Math.min(st.cursor.anchor, st.cursor.focus), hi: Math.max(st.cursor.anchor, st.cursor.focus) };
  }

  function tokenSpan(st, lo, hi) {
    var b = st.tokens[lo][0], e = st.tokens[hi][1];
    return { begin: b, length: e - b, text: st.chars.slice(b, e).join("") };
  }

  function setCursor(st, anchor, focus) {
    var n = nTokens(st);
    anchor = Math.max(0, Math.min(n - 1, anchor));
    focus = Math.max(0, Math.min(n - 1, focus));
    st.cursor = { anchor: anchor, focus: focus };
    var r = cursorRange(st), sp = tokenSpan(st, r.lo, r.hi), words = r.hi - r.lo + 1;
    if (st.status) st.status.textContent = "Selected: " + q(sp.text) + (words > 1 ? " (" + words + " words)" : "");
    if (st.addBtn) st.addBtn.disabled = false;
  }

  function freeCand(st, begin, length, input) {
    var key = begin + ":" + length;
    if (!st.cands[key]) {
      var text = st.chars.slice(begin, begin + length).join("");
      if (!input) {
        // the form's field for it (so drafts and the plain form POST carry it); enabled while it is chosen
        input = document.createElement("input");
        input.type = "hidden";
        input.className = "aspect-free-input";
        input.name = "item-" + st.el.dataset.itemId + "-aspects[]";
        input.value = key;
        input.disabled = true;
        $(st.el, ".aspect-lists").appendChild(input);
      }
      // not in st.keys: a free span is never offered in the field's list
      st.cands[key] = { key: key, begin: begin, length: length, text: text, lower: text.toLowerCase(),
                        list: "free", cb: null, input: input, rank: Infinity };
    }
    return st.cands[key];
  }

  function addTokens(st, lo, hi) {
    var sp = tokenSpan(st, lo, hi);
    var c = freeCand(st, sp.begin, sp.length);
    var ok = pick(st, c.key, true);
    if (ok) {
      if (c.list === "second") { st.revealed = true; render(st); } // a second-list candidate: that list is in use
      var next = Math.min(hi + 1, nTokens(st) - 1);
      setCursor(st, next, next);
      render(st);
    }
    return ok;
  }

  function addCursor(st) {
    var r = cursorRange(st);
    return r ? addTokens(st, r.lo, r.hi) : false;
  }

  function removeAtCursor(st) {
    var r = cursorRange(st);
    if (!r) return false;
    var sp = tokenSpan(st, r.lo, r.hi), hit = null;
    chosen(st).forEach(function (c) { if (!hit && overlaps(c, sp)) hit = c; });
    if (hit) remove(st, hit.key);
    return !!hit;
  }

  function freeKey(st, ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return; // Ctrl+Enter submits (hit.js), Alt+M is the item's
    if (!/^(ArrowLeft|ArrowRight|Home|End|Enter|Delete|Backspace|Escape)$/.test(ev.key)) return;
    var n = nTokens(st);
    if (!st.cursor) setCursor(st, 0, 0);
    if (ev.key !== "Enter" && st.warning.dataset.kind === "refused") warn(st, ""); // read; moving on clears it
    var c = st.cursor, handled = true;
    switch (ev.key) {
      case "ArrowLeft":
      case "ArrowRight":
        var step = ev.key === "ArrowRight" ? 1 : -1;
        if (ev.shiftKey) setCursor(st, c.anchor, c.focus + step);
        else {
          var r = cursorRange(st);
          var from = r.lo === r.hi ? c.focus + step : (step > 0 ? r.hi : r.lo); // a range collapses to its edge
          setCursor(st, from, from);
        }
        break;
      case "Home":
        setCursor(st, ev.shiftKey ? c.anchor : 0, 0);
        break;
      case "End":
        setCursor(st, ev.shiftKey ? c.anchor : n - 1, n - 1);
        break;
      case "Enter":
        addCursor(st);
        break;
      case "Delete":
      case "Backspace":
        removeAtCursor(st);
        break;
      case "Escape":
        setCursor(st, c.focus, c.focus);
        break;
      default:
        handled = false;
    }
    if (handled) {
      ev.preventDefault();
      ev.stopPropagation(); // hit.js would submit on Enter
      render(st);
    }
  }

  function offsetIn(st, node, offset) {
    // the character offset (code points, like the server's) of a DOM point, clamped to the sentence
    var r = document.createRange();
    r.selectNodeContents(st.sentence);
    var cmp;
    try { cmp = r.comparePoint(node, offset); } catch (e) { return null; }
    if (cmp < 0) return 0;
    if (cmp > 0) return st.chars.length;
    r.setEnd(node, offset);
    return Array.from(r.toString()).length;
  }

  function freeMouseUp(st, ev, shift) {
    var sel = window.getSelection();
    var range = sel && sel.rangeCount ? sel.getRangeAt(0) : null;
    if (range && !range.collapsed && range.intersectsNode(st.sentence)) {
      var b = offsetIn(st, range.startContainer, range.startOffset);
      var e = offsetIn(st, range.endContainer, range.endOffset);
      if (b === null || e === null || e <= b) return;
      var lo = -1, hi = -1;
      st.tokens.forEach(function (t, i) {
        if (t[0] < e && t[1] > b) { if (lo < 0) lo = i; hi = i; }
      });
      sel.removeAllRanges();
      if (lo < 0) return; // only spaces selected
      setCursor(st, lo, hi);
      addTokens(st, lo, hi);
      render(st);
      return;
    }
    var tok = ev.target && ev.target.closest ? ev.target.closest(".aspect-tok") : null;
    if (tok && st.sentence.contains(tok)) {
      var i = parseInt(tok.dataset.i, 10), a = st.touchAnchor;
      st.touchAnchor = null;
      if (shift && st.cursor) setCursor(st, st.cursor.anchor, i);
      else if (st.touch && a !== null && a !== undefined && a !== i && st.cursor && st.cursor.anchor === a &&
               st.cursor.focus === a) {
        setCursor(st, a, i); // a second tap (touch has no Shift): the words from the first tap to this one
      } else {
        setCursor(st, i, i);
        if (st.touch) st.touchAnchor = i;
      }
      render(st);
    }
  }

  function renderFree(st, spans) {
    // the sentence as token <span>s (data-i) and the text between them; chosen aspects as <mark>s around them;
    // the words under the cursor (and the spaces between them) carry the class "cursor"
    var s = st.sentence, chars = st.chars, len = chars.length;
    var r = cursorRange(st);
    var cb = r ? st.tokens[r.lo][0] : -1, ce = r ? st.tokens[r.hi][1] : -1;
    var cuts = {};
    cuts[0] = cuts[len] = true;
    st.tokens.forEach(function (t) { cuts[t[0]] = cuts[t[1]] = true; });
    spans.forEach(function (c) { cuts[c.begin] = cuts[c.begin + c.length] = true; });
    if (r) { cuts[cb] = cuts[ce] = true; }
    var points = Object.keys(cuts).map(Number).filter(function (x) { return x >= 0 && x <= len; })
      .sort(function (a, b) { return a - b; });
    s.textContent = "";
    var ti = 0, curMark = null, markEl = null, curTok = -1, tokEl = null;
    for (var p = 0; p + 1 < points.length; p++) {
      var a = points[p], b = points[p + 1];
      while (ti < st.tokens.length && st.tokens[ti][1] <= a) ti++;
      var tok = ti < st.tokens.length && st.tokens[ti][0] <= a && b <= st.tokens[ti][1] ? ti : -1;
      var mark = null;
      spans.forEach(function (c) { if (!mark && c.begin <= a && b <= c.begin + c.length) mark = c; });
      if (mark !== curMark) {
        curMark = mark;
        markEl = null;
        curTok = -1;
        if (mark) {
          markEl = document.createElement("mark");
          markEl.dataset.key = mark.key;
          if (mark.list === "second" || mark.list === "free") markEl.className = mark.list;
          if (mark.key === st.flashKey) markEl.classList.add("flash");
          s.appendChild(markEl);
        }
      }
      var box = markEl || s, text = chars.slice(a, b).join(""), inCursor = r && cb <= a && b <= ce;
      if (tok >= 0) {
        if (tok !== curTok || !tokEl || tokEl.parentNode !== box) {
          tokEl = document.createElement("span");
          tokEl.className = "aspect-tok" + (inCursor ? " cursor" : "");
          tokEl.dataset.i = tok;
          box.appendChild(tokEl);
          curTok = tok;
        }
        tokEl.appendChild(document.createTextNode(text));
      } else {
        curTok = -1;
        tokEl = null;
        if (inCursor) {
          var gap = document.createElement("span");
          gap.className = "cursor";
          gap.textContent = text;
          box.appendChild(gap);
        } else {
          box.appendChild(document.createTextNode(text));
        }
      }
    }
  }

  // --- the HIT page interface ------------------------------------------------------------------------------
  function ticked(box) { return !!(box && box.checked); }

  window.ArgoraHIT.register("aspect", {
    setup: setup,
    isAnswered: function (el) {
      var st = states.get(el);
      if (!st) return false;
      var na = ticked(st.noAspect), nil = ticked(st.notInList);
      if (na && (st.order.length || nil)) return false;
      if (!st.order.length && !na && !nil) return false;
      return !(na || nil) || !!(st.answer && DIGITS.test(st.answer.value));
    },
    collect: function (el) {
      // the response of annotation/task_types/aspect.py: {"aspects": ["begin:length", ...], "no_aspect",
      // "not_in_lists", "check" (the sum, only asked when a box is ticked)}
      var st = states.get(el);
      if (!st) return {};
      var out = {
        aspects: chosen(st).slice().sort(function (a, b) { return a.begin - b.begin; })
          .map(function (c) { return c.begin + ":" + c.length; }),
        no_aspect: ticked(st.noAspect),
        not_in_lists: ticked(st.notInList)
      };
      if (out.no_aspect || out.not_in_lists) out.check = st.answer ? st.answer.value : "";
      return out;
    },
    onKey: function (el, ev) {
      // Keys that reach here were not typed into a text field (the item, a box, the button).
      var st = states.get(el);
      if (!st) return false;
      if (ev.target === el && (ev.key === " " || ev.key === "ArrowRight")) { st.input.focus(); return true; }
      return false;
    }
  });
})();
