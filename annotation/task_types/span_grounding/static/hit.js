/* span_grounding: highlight the factual spans of an argument and ground each to a KB variable or Others
 * (ArgU §3.1: span detection + span grounding).
 *
 * State per item: spans [{begin, end, variable (id | null = Others | undefined = not grounded yet), sugg (index of
 * the suggestion it was taken from, or -1)}], the suggestions' decisions (pending / accepted / rejected), the
 * selected span, and a token cursor. Every offset is a character offset (code points, like the server's) on the
 * payload's token boundaries ("tokens"); the server checks all of it again.
 *
 * Mouse: drag over words (the selection snaps to whole tokens) to mark a span; it becomes the selected span. Click a
 *   span to select it, drag the handles at its ends to resize it; click a variable on the right to ground it; the
 *   chips under the text select (click), remove (×), or accept/reject a suggestion (✓ / ✗).
 * Touch (a phone): tap a word (the cursor), tap another word to extend the cursor to it, then "Mark selected words"
 *   (the button marks the words under the cursor, with a mouse too); tap a span to select it and a variable to
 *   ground it; the chips work as with the mouse.
 * Keyboard (the text is the item's tab stop): ←/→ move the token cursor (onto a span = select it), Shift+←/→ extend
 *   it, Home/End, Enter marks the words under the cursor, Escape collapses / deselects. On a selected span:
 *   1..N ground it to that variable, 0 (or O) to Others, Shift+←/→ move its end, Alt+Shift+←/→ move its start,
 *   Delete/Backspace remove it. A / R accept / reject the outlined suggestion (the one under the cursor, else the
 *   first undecided one). Digits, A, R and Delete also work while another part of the item has the focus.
 * An overlap (new span, resize, accepted suggestion) is refused with a warning (role=alert).
 * An item is answered when every span is grounded, no suggestion is undecided, the schemes (if asked) are chosen,
 * and, with no span at all, the "No factual span in this argument" box is ticked.
 * The answer records the decisions on suggestions: spans taken from one carry from_suggestion, and "rejected" lists
 * the suggestions turned down (rejected with R / ✗, or taken and then removed or resized).
 */
(function () {
  "use strict";
  var states = new WeakMap();

  function $(el, sel) { return el.querySelector(sel); }
  function $$(el, sel) { return Array.prototype.slice.call(el.querySelectorAll(sel)); }
  function q(text) { return "\u201c" + text + "\u201d"; }
  function overlaps(a, b) { return a.begin < b.end && b.begin < a.end; }
  function parseJSON(s, fallback) { try { return JSON.parse(s); } catch (e) { return fallback; } }

  // --- set-up -----------------------------------------------------------------------------------------
  function setup(el) {
    var widget = $(el, ".sg-widget");
    var text = $(el, ".sg-text");
    if (!widget || !text) return;
    var iid = el.dataset.itemId;
    var st = {
      el: el, iid: iid, text: text, widget: widget, chars: Array.from(text.textContent),
      tokens: parseJSON(text.dataset.tokens, []) || [],
      suggestions: (parseJSON(text.dataset.suggestions, []) || []).map(function (s) {
        return { begin: s.begin, end: s.end, variable: s.variable === undefined ? null : s.variable, state: "pending" };
      }),
      vars: [], varById: {}, spans: [], sel: -1, cursor: null, drag: null,
      chips: $(el, ".sg-spans"), todo: $(el, ".sg-todo"), warning: $(el, ".sg-warning"),
      noneLabel: $(el, ".sg-none"), noneBox: $(el, ".sg-none-box"), stateBox: $(el, ".sg-state"),
      askSchemes: $(el, ".sg-task").dataset.askSchemes === "1"
    };
    states.set(el, st);
    $$(el, ".sg-var").forEach(function (b) {
      b.tabIndex = -1;
      var key = parseInt(b.dataset.key, 10);
      if (b.dataset.var === "other") { st.others = { id: null, key: 0, text: "Others", button: b }; return; }
      var v = { id: parseInt(b.dataset.var, 10), key: key, text: $(b, ".sg-var-text").textContent, button: b };
      st.vars.push(v);
      st.varById[v.id] = v;
    });
    // the starting state: what was posted before a refused submission
    var suggested = {};
    $$(st.stateBox, 'input[name="item-' + iid + '-suggested[]"]').forEach(function (inp) { suggested[inp.value] = true; });
    $$(st.stateBox, 'input[name="item-' + iid + '-rejected[]"]').forEach(function (inp) {
      st.suggestions.forEach(function (s) { if (s.begin + ":" + s.end === inp.value) s.state = "rejected"; });
    });
    $$(st.stateBox, 'input[name="item-' + iid + '-spans[]"]').forEach(function (inp) {
      var m = /^(\d+):(\d+):?(.*)$/.exec(inp.value);
      if (!m) return;
      var sp = { begin: +m[1], end: +m[2], variable: /^\d+$/.test(m[3]) ? +m[3] : null, sugg: -1 };
      if (sp.variable !== null && !st.varById[sp.variable]) sp.variable = undefined;
      if (suggested[sp.begin + ":" + sp.end]) {
        st.suggestions.forEach(function (s, i) {
          if (s.begin === sp.begin && s.end === sp.end) { sp.sugg = i; s.state = "accepted"; }
        });
      }
      if (!st.spans.some(function (o) { return overlaps(o, sp); })) st.spans.push(sp);
    });
    sortSpans(st);
    // the no-JS controls step aside: the state inputs carry the answer from now on
    $$(el, ".sg-nojs select, .sg-nojs input").forEach(function (c) { c.disabled = true; });

    el.tabIndex = -1;
    text.tabIndex = 0;
    widget.hidden = false;
    el.addEventListener("focus", function (ev) { if (ev.target === el) text.focus(); });
    el.addEventListener("keydown", function (ev) { keydown(st, ev); });
    text.addEventListener("mousedown", function (ev) { mousedown(st, ev); });
    // a finger's tap arrives as pointerdown (pointerType "touch"), then the compatibility mouse events
    text.addEventListener("pointerdown", function (ev) { st.touch = ev.pointerType === "touch"; });
    st.markBtn = $(el, ".sg-mark");
    if (st.markBtn) {
      st.markBtn.tabIndex = -1; // the keyboard marks with Enter in the text
      st.markBtn.addEventListener("mousedown", function (ev) { ev.preventDefault(); });
      st.markBtn.addEventListener("click", function () {
        st.touchAnchor = null;
        if (st.sel < 0 && st.cursor) addFromCursor(st);
        changed(st);
        text.focus();
      });
    }
    text.addEventListener("focus", function () {
      if (!st.cursor) placeCursorAtStart(st);
      if (!st.mouseDown) render(st); // a click renders on mouseup: replacing the text under a starting drag would lose it
    });
    text.addEventListener("blur", function () { render(st); });
    $(el, ".sg-vars").addEventListener("mousedown", function (ev) { if (ev.target.closest("button")) ev.preventDefault(); });
    $(el, ".sg-vars").addEventListener("click", function (ev) {
      var b = ev.target.closest(".sg-var");
      if (!b) return;
      ground(st, b.dataset.var === "other" ? null : parseInt(b.dataset.var, 10));
      changed(st);
      text.focus();
    });
    st.chips.addEventListener("mousedown", function (ev) { if (ev.target.closest("button")) ev.preventDefault(); });
    st.chips.addEventListener("click", function (ev) { chipClick(st, ev); });
    if (st.noneBox) st.noneBox.addEventListener("change", function () { render(st); });
    $$(el, 'input[name="item-' + iid + '-schemes[]"]').forEach(function (cb) {
      cb.addEventListener("change", function () { render(st); });
    });
    render(st);
  }

  function sortSpans(st) {
    var selected = st.sel >= 0 ? st.spans[st.sel] : null;
    st.spans.sort(function (a, b) { return a.begin - b.begin; });
    st.sel = selected ? st.spans.indexOf(selected) : -1;
  }

  // --- tokens and the cursor ------------------------------------------------------------------------------
  function nTokens(st) { return st.tokens.length; }
  function clampTok(st, i) { return Math.max(0, Math.min(nTokens(st) - 1, i)); }
  function tokAt(st, offset) {
    for (var i = 0; i < st.tokens.length; i++) if (st.tokens[i][0] <= offset && offset < st.tokens[i][1]) return i;
    return -1;
  }
  function tokStarting(st, offset) {
    for (var i = 0; i < st.tokens.length; i++) if (st.tokens[i][0] === offset) return i;
    return -1;
  }
  function tokEnding(st, offset) {
    for (var i = 0; i < st.tokens.length; i++) if (st.tokens[i][1] === offset) return i;
    return -1;
  }
  function setCursor(st, anchor, focus) { st.cursor = { anchor: clampTok(st, anchor), focus: clampTok(st, focus) }; }
  function cursorRange(st) {
    if (!st.cursor || !nTokens(st)) return null;
    var lo = Math.min(st.cursor.anchor, st.cursor.focus), hi = Math.max(st.cursor.anchor, st.cursor.focus);
    return { lo: lo, hi: hi, begin: st.tokens[lo][0], end: st.tokens[hi][1] };
  }
  function placeCursorAtStart(st) { if (nTokens(st)) setCursor(st, 0, 0); }
  function cursorOnSpan(st, sp) {
    var lo = tokStarting(st, sp.begin), hi = tokEnding(st, sp.end);
    if (lo >= 0 && hi >= 0) setCursor(st, lo, hi);
  }
  function spanIndexAt(st, offset) {
    for (var i = 0; i < st.spans.length; i++) if (st.spans[i].begin <= offset && offset < st.spans[i].end) return i;
    return -1;
  }
  function textOf(st, sp) { return st.chars.slice(sp.begin, sp.end).join(""); }

  // --- the answer --------------------------------------------------------------------------------------------
  function varName(st, v) {
    if (v === null) return { key: 0, text: "Others" };
    return st.varById[v] || null;
  }

  function warn(st, message) { st.warning.textContent = message || ""; }

  function overlapping(st, sp, except) {
    for (var i = 0; i < st.spans.length; i++) if (st.spans[i] !== except && overlaps(st.spans[i], sp)) return st.spans[i];
    return null;
  }

  function refuse(st, sp, other) {
    warn(st, "Spans must not overlap: " + q(textOf(st, sp)) + " overlaps " + q(textOf(st, other)) +
      ". Remove or shrink that span first.");
    st.flash = other;
  }

  function addSpan(st, begin, end, variable, sugg) {
    var sp = { begin: begin, end: end, variable: variable, sugg: sugg === undefined ? -1 : sugg };
    var other = overlapping(st, sp, null);
    if (other) { refuse(st, sp, other); return null; }
    st.spans.push(sp);
    sortSpans(st);
    st.sel = st.spans.indexOf(sp);
    cursorOnSpan(st, sp);
    if (st.noneBox) st.noneBox.checked = false;
    warn(st, "");
    return sp;
  }

  function addFromCursor(st) {
    var r = cursorRange(st);
    return r ? addSpan(st, r.begin, r.end, undefined) : null;
  }

  function removeSelected(st) {
    if (st.sel < 0) return false;
    var sp = st.spans[st.sel];
    if (sp.sugg >= 0) st.suggestions[sp.sugg].state = "rejected"; // taken and then removed: no longer pending
    st.spans.splice(st.sel, 1);
    st.sel = -1;
    var lo = tokStarting(st, sp.begin);
    if (lo >= 0) setCursor(st, lo, lo);
    warn(st, "");
    return true;
  }

  function ground(st, variable) {
    var sp = st.sel >= 0 ? st.spans[st.sel] : null;
    if (!sp) {
      var r = cursorRange(st);
      // words marked with the cursor (Shift+arrows) but not yet made a span: mark and ground them at once
      if (r && r.lo !== r.hi && spanIndexAt(st, r.begin) < 0) sp = addFromCursor(st);
      if (!sp) {
        if (!st.warning.textContent) warn(st, "Select a span first: click it, or move onto it with \u2190/\u2192 (Enter marks new words).");
        return false;
      }
    }
    sp.variable = variable;
    warn(st, "");
    return true;
  }

  function resize(st, edge, step) {
    var sp = st.sel >= 0 ? st.spans[st.sel] : null;
    if (!sp) return false;
    var lo = tokStarting(st, sp.begin), hi = tokEnding(st, sp.end);
    if (lo < 0 || hi < 0) return false;
    if (edge === "end") hi += step; else lo += step;
    if (lo < 0 || hi >= nTokens(st)) return true; // at the edge of the text
    if (lo > hi) { warn(st, "A span keeps at least one word; Delete removes it."); return true; }
    return setEdges(st, sp, lo, hi);
  }

  function setEdges(st, sp, lo, hi) {
    var next = { begin: st.tokens[lo][0], end: st.tokens[hi][1] };
    var other = overlapping(st, next, sp);
    if (other) { refuse(st, next, other); return true; }
    if (next.begin !== sp.begin || next.end !== sp.end) {
      sp.begin = next.begin;
      sp.end = next.end;
      if (sp.sugg >= 0) { st.suggestions[sp.sugg].state = "rejected"; sp.sugg = -1; } // resized: the annotator's own
    }
    sortSpans(st);
    cursorOnSpan(st, sp);
    warn(st, "");
    return true;
  }

  function pendingAt(st) {
    // the suggestion A / R act on: the undecided one under the cursor, else the first undecided one
    var r = cursorRange(st), first = -1;
    for (var i = 0; i < st.suggestions.length; i++) {
      var s = st.suggestions[i];
      if (s.state !== "pending") continue;
      if (r && overlaps(s, r)) return i;
      if (first < 0) first = i;
    }
    return first;
  }

  function accept(st, i) {
    if (i < 0) { warn(st, "No suggestion left to accept."); return false; }
    var s = st.suggestions[i];
    var sp = addSpan(st, s.begin, s.end, s.variable === null || st.varById[s.variable] ? s.variable : undefined, i);
    if (sp) s.state = "accepted";
    return !!sp;
  }

  function reject(st, i) {
    if (i < 0) { warn(st, "No suggestion left to reject."); return false; }
    st.suggestions[i].state = "rejected";
    warn(st, "");
    return true;
  }

  function schemeBoxes(st) { return $$(st.el, 'input[name="item-' + st.iid + '-schemes[]"]'); }

  function missing(st) {
    // what still stands between this item and "answered" (shown under the text), or ""
    var n = st.vars.length;
    var ungrounded = st.spans.filter(function (s) { return s.variable === undefined; }).length;
    var pending = st.suggestions.filter(function (s) { return s.state === "pending"; }).length;
    var parts = [];
    if (ungrounded) parts.push("ground " + (ungrounded === 1 ? "1 span" : ungrounded + " spans") + " (keys 1\u2013" + n + " or 0)");
    if (pending) parts.push("accept or reject " + (pending === 1 ? "1 suggestion" : pending + " suggestions") + " (A / R)");
    if (!st.spans.length && !pending && !(st.noneBox && st.noneBox.checked)) parts.push("mark the factual spans, or tick the box if there are none");
    if (st.askSchemes && !schemeBoxes(st).some(function (cb) { return cb.checked; })) parts.push("choose the argument scheme(s)");
    return parts.length ? "To do: " + parts.join("; ") + "." : "";
  }

  // --- keys --------------------------------------------------------------------------------------------------
  function keydown(st, ev) {
    if (ev.ctrlKey || ev.metaKey) return; // Ctrl+Enter submits (hit.js)
    var t = ev.target, tag = t.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT" || (tag === "INPUT" && !/^(radio|checkbox|button|submit)$/i.test(t.type))) return;
    var inText = t === st.text, key = ev.key, handled = false, n = nTokens(st);
    if (inText && n && /^(ArrowLeft|ArrowRight|Home|End|Enter|Escape)$/.test(key)) {
      if (!st.cursor) placeCursorAtStart(st);
      var c = st.cursor, r = cursorRange(st), step = key === "ArrowRight" ? 1 : -1;
      handled = true;
      if (key !== "Enter") st.flash = null;
      if ((key === "ArrowLeft" || key === "ArrowRight") && ev.altKey && ev.shiftKey) {
        handled = resize(st, "begin", step) || (warn(st, "Select a span to move its start."), true);
      } else if (ev.altKey) {
        return; // Alt+arrows belong to the browser (history)
      } else if ((key === "ArrowLeft" || key === "ArrowRight") && ev.shiftKey && st.sel >= 0) {
        resize(st, "end", step);
      } else if (key === "ArrowLeft" || key === "ArrowRight") {
        if (ev.shiftKey) setCursor(st, c.anchor, c.focus + step);
        else {
          var to = st.sel >= 0 ? (step > 0 ? r.hi + 1 : r.lo - 1) : (r.lo === r.hi ? c.focus + step : (step > 0 ? r.hi : r.lo));
          moveTo(st, clampTok(st, to));
        }
        if (!ev.shiftKey) warn(st, "");
      } else if (key === "Home" || key === "End") {
        var edge = key === "Home" ? 0 : n - 1;
        if (ev.shiftKey && st.sel < 0) setCursor(st, c.anchor, edge); else moveTo(st, edge);
      } else if (key === "Escape") {
        st.sel = -1;
        setCursor(st, c.focus, c.focus);
        warn(st, "");
      } else if (key === "Enter") {
        if (ev.shiftKey || ev.altKey) return;
        if (st.sel >= 0) return; // the cursor is on a span: nothing new to mark, so Enter submits as everywhere (hit.js)
        addFromCursor(st);
      }
    } else if (!ev.altKey && /^[0-9]$/.test(key) && !ev.shiftKey) {
      var k = parseInt(key, 10);
      if (k === 0) handled = ground(st, null) || true;
      else if (k <= st.vars.length) handled = ground(st, st.vars[k - 1].id) || true;
      else { warn(st, "This argument offers " + st.vars.length + " variables: keys 1\u2013" + st.vars.length + ", 0 = Others."); handled = true; }
    } else if (!ev.altKey && (key === "o" || key === "O")) {
      handled = ground(st, null) || true;
    } else if (!ev.altKey && (key === "a" || key === "A")) {
      accept(st, pendingAt(st));
      handled = true;
    } else if (!ev.altKey && (key === "r" || key === "R")) {
      reject(st, pendingAt(st));
      handled = true;
    } else if (!ev.altKey && (key === "Delete" || key === "Backspace")) {
      if (!removeSelected(st)) warn(st, "Select a span to remove it.");
      handled = true;
    }
    if (handled) {
      ev.preventDefault();
      ev.stopPropagation(); // hit.js would submit on Enter or read the keys again
      if (!inText && /^(Delete|Backspace|[aArR0-9oO])$/.test(key) && document.activeElement !== st.text) st.text.focus();
      changed(st);
    }
  }

  function moveTo(st, i) {
    // a plain cursor move: onto a span selects the whole span, elsewhere deselects
    var at = spanIndexAt(st, st.tokens[i][0]);
    st.sel = at;
    if (at >= 0) cursorOnSpan(st, st.spans[at]); else setCursor(st, i, i);
  }

  // --- mouse -------------------------------------------------------------------------------------------------
  function offsetIn(st, node, offset) {
    // the character offset (code points) of a DOM point, clamped to the text
    var r = document.createRange();
    r.selectNodeContents(st.text);
    var cmp;
    try { cmp = r.comparePoint(node, offset); } catch (e) { return null; }
    if (cmp < 0) return 0;
    if (cmp > 0) return st.chars.length;
    r.setEnd(node, offset);
    return Array.from(r.toString()).length;
  }

  function tokenOfTarget(st, target) {
    var seg = target && target.closest ? target.closest("[data-b]") : null;
    if (!seg || !st.text.contains(seg)) return -1;
    return tokAt(st, parseInt(seg.dataset.b, 10));
  }

  function mousedown(st, ev) {
    if (ev.button !== 0) return;
    st.mouseDown = true;
    var handle = ev.target.closest ? ev.target.closest(".sg-handle") : null;
    if (handle && st.sel >= 0) {
      ev.preventDefault(); // no text selection while a handle is dragged
      st.drag = { edge: handle.dataset.edge, span: st.spans[st.sel] };
      st.text.focus();
    }
    var move = function (e) {
      if (!st.drag) return;
      var tok = tokenOfTarget(st, document.elementFromPoint(e.clientX, e.clientY));
      if (tok < 0) return;
      var sp = st.drag.span, lo = tokStarting(st, sp.begin), hi = tokEnding(st, sp.end);
      if (st.drag.edge === "begin") lo = Math.min(tok, hi); else hi = Math.max(tok, lo);
      st.sel = st.spans.indexOf(sp);
      setEdges(st, sp, lo, hi);
      changed(st);
    };
    var up = function (e) {
      st.mouseDown = false;
      document.removeEventListener("mousemove", move);
      document.removeEventListener("mouseup", up);
      if (st.drag) { st.drag = null; changed(st); return; }
      mouseup(st, e);
    };
    document.addEventListener("mousemove", move);
    document.addEventListener("mouseup", up);
  }

  function mouseup(st, ev) {
    var sel = window.getSelection();
    var range = sel && sel.rangeCount ? sel.getRangeAt(0) : null;
    st.flash = null;
    if (range && !range.collapsed && range.intersectsNode(st.text)) {
      var b = offsetIn(st, range.startContainer, range.startOffset);
      var e = offsetIn(st, range.endContainer, range.endOffset);
      sel.removeAllRanges();
      if (b === null || e === null || e <= b) return;
      var lo = -1, hi = -1;
      st.tokens.forEach(function (t, i) { if (t[0] < e && t[1] > b) { if (lo < 0) lo = i; hi = i; } });
      if (lo < 0) return; // only spaces
      st.sel = -1;
      setCursor(st, lo, hi);
      addFromCursor(st);
      st.text.focus();
      changed(st);
      return;
    }
    var tok = tokenOfTarget(st, ev.target);
    if (tok < 0) return;
    st.text.focus();
    var a = st.touchAnchor;
    st.touchAnchor = null;
    if (ev.shiftKey && st.cursor && st.sel < 0) setCursor(st, st.cursor.anchor, tok);
    else if (st.touch && a !== null && a !== undefined && a !== tok && st.sel < 0 && st.cursor &&
             st.cursor.anchor === a && st.cursor.focus === a && spanIndexAt(st, st.tokens[tok][0]) < 0) {
      setCursor(st, a, tok); // a second tap (touch has no Shift): the words from the first tap to this one
    } else {
      moveTo(st, tok);
      if (st.touch && st.sel < 0) st.touchAnchor = tok;
    }
    warn(st, "");
    changed(st);
  }

  function chipClick(st, ev) {
    var b = ev.target.closest("button[data-act]");
    var li = ev.target.closest("li");
    if (!li) return;
    var act = b ? b.dataset.act : "select";
    st.flash = null;
    if (li.dataset.sugg !== undefined && li.dataset.span === undefined) {
      var i = parseInt(li.dataset.sugg, 10);
      if (act === "accept") accept(st, i);
      else if (act === "reject") reject(st, i);
      else { var s = st.suggestions[i], lo = tokStarting(st, s.begin), hi = tokEnding(st, s.end); if (lo >= 0 && hi >= 0) { st.sel = -1; setCursor(st, lo, hi); } }
    } else {
      var sp = st.spans[parseInt(li.dataset.span, 10)];
      st.sel = st.spans.indexOf(sp);
      if (act === "remove") removeSelected(st);
      else cursorOnSpan(st, sp);
    }
    st.text.focus();
    changed(st);
  }

  // --- rendering ---------------------------------------------------------------------------------------------
  function changed(st) {
    render(st);
    // hit.js recounts the answered items and clears the item's server error on "change"
    st.el.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function colourOf(st, v) {
    if (v === undefined) return "sg-cx";
    if (v === null) return "sg-c0";
    var d = st.varById[v];
    return d ? "sg-c" + d.key : "sg-cx";
  }

  function render(st) {
    renderText(st);
    renderChips(st);
    renderState(st);
    var sp = st.sel >= 0 ? st.spans[st.sel] : null;
    st.vars.concat(st.others ? [st.others] : []).forEach(function (v) {
      v.button.setAttribute("aria-pressed", sp && sp.variable === v.id ? "true" : "false");
    });
    st.el.classList.toggle("sg-has-selection", !!sp);
    if (st.markBtn) {
      var r = cursorRange(st);
      st.markBtn.disabled = !(r && !sp && spanIndexAt(st, r.begin) < 0);
    }
    var noSpans = !st.spans.length;
    if (st.noneLabel) st.noneLabel.hidden = !noSpans;
    if (!noSpans && st.noneBox) st.noneBox.checked = false;
    st.todo.textContent = missing(st);
  }

  function renderText(st) {
    // flat segments (<span data-b="begin">) cut at every token, span, suggestion and cursor boundary; classes say
    // what covers a segment. Only the handles are extra elements, and they hold no text (offsets stay right).
    var s = st.text, len = st.chars.length, r = cursorRange(st), focused = document.activeElement === s;
    var cur = pendingAt(st);
    var cuts = {};
    cuts[0] = cuts[len] = true;
    st.tokens.forEach(function (t) { cuts[t[0]] = cuts[t[1]] = true; });
    st.spans.forEach(function (c) { cuts[c.begin] = cuts[c.end] = true; });
    st.suggestions.forEach(function (c) { cuts[c.begin] = cuts[c.end] = true; });
    var points = Object.keys(cuts).map(Number).filter(function (x) { return x >= 0 && x <= len; }).sort(function (a, b) { return a - b; });
    var sel = st.sel >= 0 ? st.spans[st.sel] : null;
    s.textContent = "";
    for (var p = 0; p + 1 < points.length; p++) {
      var a = points[p], b = points[p + 1];
      var seg = document.createElement("span");
      seg.dataset.b = a;
      seg.textContent = st.chars.slice(a, b).join("");
      var cls = [];
      var tok = tokAt(st, a);
      if (tok >= 0) cls.push("sg-tok");
      var spanIdx = spanIndexAt(st, a), sp = spanIdx >= 0 ? st.spans[spanIdx] : null;
      if (sp) {
        cls.push("sg-span", colourOf(st, sp.variable));
        if (a === sp.begin) cls.push("sg-first");
        if (b === sp.end) { cls.push("sg-last"); seg.dataset.key = sp.variable === undefined ? "?" : (sp.variable === null ? "0" : (st.varById[sp.variable] || { key: "?" }).key); }
        if (sp === sel) cls.push("sg-selected");
        if (sp === st.flash) cls.push("sg-flash");
      }
      st.suggestions.forEach(function (g, gi) {
        if (g.state !== "pending" || !(g.begin <= a && b <= g.end)) return;
        cls.push("sg-sugg");
        if (gi === cur) cls.push("sg-sugg-current");
        if (a === g.begin) cls.push("sg-sugg-first");
        if (b === g.end) cls.push("sg-sugg-last");
      });
      if (r && !sel && r.begin <= a && b <= r.end && (focused || r.lo !== r.hi)) cls.push("sg-cursor");
      seg.className = cls.join(" ");
      if (sel && a === sel.begin) s.appendChild(handle("begin"));
      s.appendChild(seg);
      if (sel && b === sel.end) s.appendChild(handle("end"));
    }
  }

  function handle(edge) {
    var h = document.createElement("span");
    h.className = "sg-handle sg-handle-" + edge;
    h.dataset.edge = edge;
    h.setAttribute("aria-hidden", "true");
    h.title = edge === "begin" ? "Drag to move the start of the span" : "Drag to move the end of the span";
    return h;
  }

  function button(act, label, title) {
    var b = document.createElement("button");
    b.type = "button";
    b.tabIndex = -1;
    b.dataset.act = act;
    b.className = "sg-chip-" + act;
    b.textContent = label;
    b.title = title;
    b.setAttribute("aria-label", title);
    return b;
  }

  function renderChips(st) {
    var ul = st.chips, sel = st.sel >= 0 ? st.spans[st.sel] : null, cur = pendingAt(st);
    ul.textContent = "";
    var rows = [];
    st.spans.forEach(function (sp, i) { rows.push({ begin: sp.begin, span: sp, i: i }); });
    st.suggestions.forEach(function (g, i) { if (g.state === "pending") rows.push({ begin: g.begin, sugg: g, i: i }); });
    rows.sort(function (a, b) { return a.begin - b.begin; });
    rows.forEach(function (row) {
      var li = document.createElement("li");
      var words = document.createElement("span");
      words.className = "sg-chip-text";
      var target = document.createElement("span");
      target.className = "sg-chip-var";
      if (row.span) {
        var sp = row.span, v = sp.variable === undefined ? null : varName(st, sp.variable);
        li.dataset.span = row.i;
        li.className = "sg-chip " + colourOf(st, sp.variable) + (sp === sel ? " sg-selected" : "") + (sp.sugg >= 0 ? " sg-from-sugg" : "");
        words.textContent = q(textOf(st, sp));
        target.textContent = sp.variable === undefined ? "\u2192 not grounded yet" : "\u2192 " + (v ? v.key + " " + v.text : "?");
        li.title = sp.sugg >= 0 ? "Accepted suggestion" : "Your span";
        li.appendChild(words);
        li.appendChild(target);
        li.appendChild(button("remove", "\u00d7", "Remove the span " + q(textOf(st, sp))));
      } else {
        var g = row.sugg, gv = varName(st, g.variable);
        li.dataset.sugg = row.i;
        li.className = "sg-chip sg-chip-sugg" + (row.i === cur ? " sg-sugg-current" : "");
        var label = document.createElement("span");
        label.className = "sg-chip-label";
        label.textContent = "suggested";
        li.appendChild(label);
        words.textContent = q(textOf(st, g));
        target.textContent = "\u2192 " + (gv ? gv.key + " " + gv.text : "?");
        li.appendChild(words);
        li.appendChild(target);
        li.appendChild(button("accept", "\u2713", "Accept the suggested span " + q(textOf(st, g))));
        li.appendChild(button("reject", "\u2717", "Reject the suggested span " + q(textOf(st, g))));
      }
      ul.appendChild(li);
    });
    ul.hidden = !rows.length;
  }

  function rejectedSuggestions(st) {
    // the suggestions turned down (R / ✗, or taken and then removed or resized): the server stores them
    return st.suggestions.filter(function (s) { return s.state === "rejected"; });
  }

  function renderState(st) {
    // the hidden inputs the plain form posts (hit.js falls back to it when the JSON API is not there)
    var box = st.stateBox, iid = st.iid;
    box.textContent = "";
    rejectedSuggestions(st).forEach(function (g) {
      var r = document.createElement("input");
      r.type = "hidden";
      r.name = "item-" + iid + "-rejected[]";
      r.value = g.begin + ":" + g.end;
      box.appendChild(r);
    });
    st.spans.forEach(function (sp) {
      if (sp.variable === undefined) return; // not grounded: not an answer yet
      var inp = document.createElement("input");
      inp.type = "hidden";
      inp.name = "item-" + iid + "-spans[]";
      inp.value = sp.begin + ":" + sp.end + ":" + (sp.variable === null ? "other" : sp.variable);
      box.appendChild(inp);
      if (sp.sugg >= 0) {
        var s = document.createElement("input");
        s.type = "hidden";
        s.name = "item-" + iid + "-suggested[]";
        s.value = sp.begin + ":" + sp.end;
        box.appendChild(s);
      }
    });
  }

  // --- the HIT page interface ------------------------------------------------------------------------------
  window.ArgoraHIT.register("span_grounding", {
    setup: setup,
    isAnswered: function (el) {
      var st = states.get(el);
      return !!st && !missing(st);
    },
    collect: function (el) {
      // the response of annotation/task_types/span_grounding.py
      var st = states.get(el);
      if (!st) return {};
      var out = {
        spans: st.spans.map(function (sp) {
          return { begin: sp.begin, end: sp.end, variable: sp.variable === undefined ? null : sp.variable,
                   from_suggestion: sp.sugg >= 0 };
        })
      };
      if (st.suggestions.length) out.rejected = rejectedSuggestions(st).map(function (g) { return { begin: g.begin, end: g.end }; });
      if (st.askSchemes) out.schemes = schemeBoxes(st).filter(function (cb) { return cb.checked; }).map(function (cb) { return cb.value; });
      return out;
    },
    onKey: function (el, ev) {
      // keys the item's own listener left alone (e.g. on a scheme box); the text is where the editing happens
      var st = states.get(el);
      if (!st) return false;
      if (ev.target === el && (ev.key === " " || ev.key === "ArrowRight")) { st.text.focus(); return true; }
      return false;
    }
  });
})();
