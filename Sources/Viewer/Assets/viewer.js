// Tapwire's viewer: a virtual list of records (newest first), live rows over Server-Sent
// Events, and the detail of one exchange. No framework; every value from a record reaches
// the page through textContent, never as markup.
"use strict";
(function () {
  const ROW = 22, OVERSCAN = 12, PAGE = 2000;
  // Live rows are drawn at most once per this many ms: a row that comes alone is drawn on the
  // next frame, and under a busy proxy the page redraws every 0.75 s, not sixty times a
  // second: each redraw rewrites every row in view, and what the browser spends on it (style,
  // layout, paint, raster) is taken from the proxy when both share a busy machine. With the
  // log looked at every `viewer.pollInterval`, the newest row drawn stays within the second a
  // live list promises (Benchmarks/README.md, "The viewer", has the figures).
  const LIVE_RENDER_MS = 750;
  // Rows a gap's refill takes from the log while following: a screenful and then some; older
  // rows load from its cursor when scrolled to, as any history does.
  const REFILL = 300;
  // Older rows are fetched once the view comes within this many rows of the loaded end
  // (about four screens): ahead of a scrolling reader, but not by a refill's rows at the top.
  const AHEAD = 200;
  const token = document.querySelector('meta[name="tapwire-token"]').content;
  const readOnly = document.querySelector('meta[name="tapwire-mode"]').content === "view";
  const linkedFromElsewhere = document.querySelector('meta[name="tapwire-linked"]').content === "elsewhere";
  const $ = (id) => document.getElementById(id);
  const viewport = $("viewport"), spacer = $("spacer"), rowsBox = $("rows"), detail = $("detail");
  const qInput = $("q"), qError = $("qerror"), qNote = $("qnote"), followButton = $("follow"), diffButton = $("diff");
  const harLink = $("har"), countLabel = $("count"), newerButton = $("newer");

  const state = {
    query: new URLSearchParams(location.search).get("q") || "",
    live: [], history: [], ids: new Set(), next: null, loading: false, done: false, generation: 0,
    selected: [], paused: false, unseen: 0, shift: 0, source: null, pool: [], current: null, stale: false, holes: false, perLook: 100, gaps: 0, refills: 0,
    // The live stream is open (or could not be): history is read only from then on, so no
    // record falls between the page's last history row and its first live one.
    ready: false, reconnects: 0, liveStopped: false,
  };
  // What tells two rows of one record apart from rows of two: its id; a loss record has none,
  // and one loss record is one time and count (the live stream and a history page can both
  // bring it).
  const keyOf = (rec) => rec.id || (rec.kind === "loss" ? "loss " + rec.time + " " + rec.lost + " " + (rec.reason || "") : null);
  // The list, newest first, is two arrays: live rows (newest last, so a new one is a push,
  // not an unshift that moves every row) and history pages (newest first, older appended).
  const rowCount = () => state.live.length + state.history.length;
  const rowAt = (i) => (i < state.live.length ? state.live[state.live.length - 1 - i] : state.history[i - state.live.length]);
  function rowIndex(rec) {
    const j = state.live.lastIndexOf(rec);
    if (j >= 0) return state.live.length - 1 - j;
    const k = state.history.indexOf(rec);
    return k >= 0 ? state.live.length + k : -1;
  }
  // A copy in list order, for tests and the curious (the page itself never builds one).
  Object.defineProperty(state, "rows", { get: () => state.live.slice().reverse().concat(state.history) });
  window.tapwireViewer = state;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // ---- JSON that keeps numbers as their text and members in order (duplicates too) ----
  function parseExact(text) {
    let i = 0;
    const ws = () => { for (;;) { const c = text.charCodeAt(i); if (c === 32 || c === 9 || c === 10 || c === 13) i++; else return; } };
    const esc = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
    function str() {
      i++;
      let out = "", s = i;
      for (;;) {
        const c = text[i];
        if (c === undefined) throw new Error("unterminated string");
        if (c === '"') { out += text.slice(s, i); i++; return out; }
        if (c === "\\") {
          out += text.slice(s, i);
          const e = text[i + 1];
          if (e === "u") { out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16)); i += 6; }
          else { out += esc[e]; i += 2; }
          s = i;
        } else i++;
      }
    }
    function val() {
      ws();
      const c = text[i];
      if (c === "{") {
        i++; const m = []; ws();
        if (text[i] === "}") { i++; return { t: "o", m }; }
        for (;;) {
          ws(); const k = str(); ws(); i++; const v = val(); m.push([k, v]); ws();
          if (text[i] === ",") { i++; continue; }
          i++; return { t: "o", m };
        }
      }
      if (c === "[") {
        i++; const a = []; ws();
        if (text[i] === "]") { i++; return { t: "a", a }; }
        for (;;) {
          a.push(val()); ws();
          if (text[i] === ",") { i++; continue; }
          i++; return { t: "a", a };
        }
      }
      if (c === '"') return { t: "s", v: str() };
      if (c === "t") { i += 4; return { t: "b", v: "true" }; }
      if (c === "f") { i += 5; return { t: "b", v: "false" }; }
      if (c === "n") { i += 4; return { t: "z" }; }
      const s = i;
      while (i < text.length && "+-0123456789.eE".indexOf(text[i]) >= 0) i++;
      if (i === s) throw new Error("unexpected " + c + " at " + i);
      return { t: "n", v: text.slice(s, i) };
    }
    return val();
  }
  const get = (node, ...keys) => {
    for (const k of keys) {
      if (!node || node.t !== "o") return undefined;
      const m = node.m.find((p) => p[0] === k);
      node = m && m[1];
    }
    return node;
  };
  const scalar = (node) => (!node || node.t === "z" ? null : node.t === "o" || node.t === "a" ? null : node.v);
  const isNull = (node) => !node || node.t === "z";

  function compactText(node) {
    switch (node.t) {
      case "o": return "{" + node.m.map(([k, v]) => JSON.stringify(k) + ":" + compactText(v)).join(",") + "}";
      case "a": return "[" + node.a.map(compactText).join(",") + "]";
      case "s": return JSON.stringify(node.v);
      case "z": return "null";
      default: return node.v;
    }
  }
  function prettyText(node, indent) {
    indent = indent || "";
    const inner = indent + "  ";
    if (node.t === "o") {
      if (!node.m.length) return "{}";
      return "{\n" + node.m.map(([k, v]) => inner + JSON.stringify(k) + ": " + prettyText(v, inner)).join(",\n") + "\n" + indent + "}";
    }
    if (node.t === "a") {
      if (!node.a.length) return "[]";
      return "[\n" + node.a.map((v) => inner + prettyText(v, inner)).join(",\n") + "\n" + indent + "]";
    }
    return compactText(node);
  }

  function scalarSpan(node) {
    switch (node.t) {
      case "s": {
        const span = el("span", node.v === "[redacted]" ? "s redacted" : "s", JSON.stringify(node.v));
        return span;
      }
      case "n": return el("span", "n", node.v);
      case "b": return el("span", "b", node.v);
      default: return el("span", "z", "null");
    }
  }

  const TREE_LIMIT = 1000;
  function treeNode(key, node, depth) {
    if (node.t !== "o" && node.t !== "a") {
      const line = el("div", "leaf");
      if (key !== null) { line.append(el("span", "k", key), ": "); }
      line.append(scalarSpan(node));
      return line;
    }
    const d = el("details");
    if (depth < 2) d.open = true;
    const s = el("summary");
    if (key !== null) s.append(el("span", "k", key), ": ");
    const count = node.t === "o" ? node.m.length : node.a.length;
    s.append(el("span", "meta", node.t === "o" ? "{" + count + (count === 1 ? " key}" : " keys}") : "[" + count + (count === 1 ? " item]" : " items]")));
    d.append(s);
    // Children are built when first opened: a large value costs nothing until looked at.
    const fill = () => {
      if (d.dataset.filled) return;
      d.dataset.filled = "1";
      const entries = node.t === "o" ? node.m : node.a.map((v, i) => [String(i), v]);
      for (const [k, v] of entries.slice(0, TREE_LIMIT)) d.append(treeNode(k, v, depth + 1));
      if (entries.length > TREE_LIMIT) d.append(el("div", "leaf meta", "… " + (entries.length - TREE_LIMIT) + " more (raw view shows all)"));
    };
    if (d.open) fill(); else d.addEventListener("toggle", fill);
    return d;
  }
  function tree(node) {
    const t = el("div", "tree");
    t.append(treeNode(null, node, 0));
    return t;
  }

  // ---- list ----
  function fmtTime(t) { return t ? t.slice(11, 23) : ""; }
  function fmtSize(n) {
    if (n === undefined || n === null) return "";
    n = Number(n);
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KB";
    return (n / 1048576).toFixed(1) + " MB";
  }
  function fmtMs(seconds) {
    if (seconds === undefined || seconds === null) return "";
    const ms = Number(seconds) * 1000;
    return ms < 10 ? ms.toFixed(2) + " ms" : ms < 1000 ? ms.toFixed(0) + " ms" : (ms / 1000).toFixed(2) + " s";
  }

  // Where each column's cells go in the list (see viewer.css): the header cells' offsets and
  // widths, measured when the list's box changes size (the window, or its scroll bar coming or
  // going: see the ResizeObserver). The header spans the scroll bar, the rows do not: the last
  // column gives up its width.
  const headRow = document.querySelector("#list .row.head");
  function placeColumns() {
    const left = headRow.getBoundingClientRect().left;
    const cells = Array.from(headRow.children);
    const scrollBar = Math.max(0, headRow.clientWidth - viewport.clientWidth);
    cells.forEach((cell, i) => {
      const box = cell.getBoundingClientRect();
      const width = i === cells.length - 1 ? Math.max(0, box.width - scrollBar) : box.width;
      rowsBox.style.setProperty("--x" + i, (box.left - left) + "px");
      rowsBox.style.setProperty("--w" + i, width + "px");
    });
  }

  function makeRow() {
    const r = el("div", "row");
    for (let i = 0; i < 10; i++) r.append(el("span"));
    // The duration cell's bar and text, made once and rewritten in place.
    r.children[7].append(el("i"), el("b"));
    r.addEventListener("click", (ev) => { viewport.focus({ preventScroll: true }); select(r._record, ev.ctrlKey || ev.metaKey || ev.shiftKey); });
    return r;
  }

  // A row element's parts are written only when what they show changes: a followed list
  // shows new records in every row at every redraw, but most cells (method, host, path,
  // status, type, rule) read as they did, and a cell left alone is not laid out again.
  function put(node, key, value) {
    if (node["_" + key] === value) return;
    node["_" + key] = value;
    if (key === "text") node.textContent = value;
    else if (key === "className") node.className = value;
    else if (key === "hidden") node.hidden = value;
    else if (key === "title") node.title = value;
    else if (key === "top") node.style.top = value;
    else if (key === "width") node.style.width = value;
  }

  function fillRow(r, rec, index) {
    r._record = rec;
    put(r, "top", index * ROW + "px");
    const c = r.children;
    const id = rec.id || "";
    if (r.dataset.id !== id) r.dataset.id = id;
    put(r, "className", "row " + (rec.kind || "http") + (state.selected.includes(rec) ? " selected" : ""));
    if (rec.kind === "loss") {
      put(c[0], "text", fmtTime(rec.time));
      put(c[1], "text", rec.lost + " exchange" + (rec.lost == 1 ? "" : "s") + " not recorded" + (rec.reason ? " (" + rec.reason + ")" : ""));
      for (let i = 2; i < 10; i++) { if (i !== 7) put(c[i], "text", ""); put(c[i], "hidden", true); }
      // The path cell was emptied here: what it showed before is no longer there.
      c[3]._path = null;
      return;
    }
    for (let i = 2; i < 10; i++) put(c[i], "hidden", false);
    // A WebSocket message has no URL of its own: who sent it, and its opcode.
    const message = rec.kind === "wsMessage";
    put(c[0], "text", fmtTime(rec.time));
    put(c[1], "text", message ? (rec.direction === "client" ? "→ client" : rec.direction === "server" ? "← server" : "") : rec.method || "");
    put(c[1], "className", "method");
    put(c[2], "text", rec.host || "");
    put(c[2], "title", rec.host || "");
    const path = message ? (rec.opcode || "") + " message" : rec.path || "";
    const tag = rec.kind === "tunnel" || rec.kind === "websocket" ? rec.kind : message ? "ws" : "";
    const pathKey = tag + "\n" + (rec.replayOf ? "r" : "") + "\n" + path;
    if (c[3]._path !== pathKey) {
      c[3]._path = pathKey;
      c[3]._text = null;
      c[3].textContent = "";
      if (tag) c[3].append(el("span", "kind", tag));
      if (rec.replayOf) c[3].append(el("span", "replay", "↻"));
      c[3].append(path);
    }
    put(c[3], "title", (rec.replayOf ? "replay of " + rec.replayOf + "\n" : "") + (message ? "message of connection " + (rec.connection || "?") : path));
    put(c[4], "text", String(rec.status || ""));
    put(c[4], "className", "num s" + String(rec.status || "").charAt(0));
    put(c[5], "text", rec.type || "");
    put(c[6], "text", fmtSize(rec.size));
    put(c[6], "className", "num");
    put(c[7], "className", "dur");
    const bar = c[7].children[0], barText = c[7].children[1];
    if (rec.duration !== undefined) {
      const seconds = Number(rec.duration);
      // Log scale from 1 ms to 10 s: a slow call stands out whatever the rest do.
      const width = Math.max(1, Math.min(50, 50 * Math.log10(1 + seconds * 1000) / 4));
      put(bar, "className", seconds >= 1 ? "vslow" : seconds >= 0.25 ? "slow" : "");
      put(bar, "width", width.toFixed(1) + "px");
      put(bar, "hidden", false);
      put(barText, "text", fmtMs(seconds));
    } else {
      put(bar, "hidden", true);
      put(barText, "text", "");
    }
    put(c[8], "text", rec.rule || "");
    const error = rec.error || rec.failure || "";
    put(c[9], "text", error);
    put(c[9], "className", error ? "err" : "");
    put(c[9], "title", error);
  }

  let renderQueued = false;
  function render() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; renderNow(); });
  }
  let liveRenderTimer = null, lastLiveRender = 0;
  function renderLive() {
    if (liveRenderTimer) return;
    const wait = Math.max(0, LIVE_RENDER_MS - (Date.now() - lastLiveRender));
    liveRenderTimer = setTimeout(() => { liveRenderTimer = null; lastLiveRender = Date.now(); render(); }, wait);
  }
  function renderNow() {
    const count = rowCount();
    spacer.style.height = count * ROW + "px";
    if (state.shift) {
      viewport.scrollTop += state.shift;
      state.shift = 0;
      newerButton.hidden = false;
      newerButton.textContent = "↑ " + state.unseen + " new";
    } else if (state.stale) {
      newerButton.hidden = false;
      newerButton.textContent = "↑ " + state.unseen + " new";
    }
    // Rows drawn past the window's edges are for a scrolling reader; a followed list, redrawn
    // whole at every batch of new rows, draws a wheel step's worth (about 100 px) past it.
    const overscan = viewport.scrollTop < ROW && !state.paused ? 5 : OVERSCAN;
    const first = Math.max(0, Math.floor(viewport.scrollTop / ROW) - overscan);
    const last = Math.min(count, Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW) + overscan);
    const needed = last - first;
    while (state.pool.length < needed) { const r = makeRow(); state.pool.push(r); rowsBox.append(r); }
    for (let i = 0; i < state.pool.length; i++) {
      const r = state.pool[i];
      if (i >= needed) { if (!r.hidden) r.hidden = true; continue; }
      if (r.hidden) r.hidden = false;
      // A row element is rewritten only when what it shows changed: the DOM writes, not the
      // loop, are what a redraw costs.
      const rec = rowAt(first + i), selected = state.selected.includes(rec);
      if (r._record === rec && r._index === first + i && r._selected === selected) continue;
      fillRow(r, rec, first + i);
      r._index = first + i;
      r._selected = selected;
    }
    const label = count.toLocaleString() + (state.done ? "" : "+") + " records" + (state.liveStopped ? " · no live rows: reload the page" : "");
    if (countLabel.textContent !== label) countLabel.textContent = label;
    if (!state.done && !state.loading && last + AHEAD > count) loadOlder();
  }

  viewport.addEventListener("scroll", () => {
    if (viewport.scrollTop < ROW) { newerButton.hidden = true; state.unseen = 0; refillIfStale(); }
    else if (state.holes) refillSoon(); // leaving the followed top: the rows below are made whole first
    render();
  }, { passive: true });
  // Any change of the list's size: the window's, or the scroll bar's, which comes and goes with
  // the rows' height and changes the rows' width but not the window's. Observers run after
  // layout, so measuring the header here costs no forced layout in a redraw; the first one
  // comes before the page is first painted.
  new ResizeObserver(() => { placeColumns(); render(); }).observe(viewport);

  function showQueryError(message, column) {
    if (message === null) { qError.hidden = true; qInput.classList.remove("invalid"); return; }
    qInput.classList.add("invalid");
    qError.hidden = false;
    qError.textContent = (column ? " ".repeat(column - 1) + "^ column " + column + ": " : "") + message;
  }

  async function api(path) {
    const response = await fetch(path, { headers: { Accept: "application/json" } });
    const text = await response.text();
    if (!response.ok) {
      let body = {};
      try { body = JSON.parse(text); } catch (e) { body = { error: text }; }
      const error = new Error(body.error || response.statusText);
      error.column = body.column; error.status = response.status;
      throw error;
    }
    return text;
  }

  async function loadOlder() {
    if (state.loading || state.done || !state.ready) return;
    state.loading = true;
    const generation = state.generation, refills = state.refills;
    const params = new URLSearchParams({ q: state.query, limit: String(PAGE) });
    if (state.next) params.set("before", state.next);
    try {
      const page = JSON.parse(await api("/api/records?" + params));
      // A refill replaced the history this page would continue.
      if (generation !== state.generation || refills !== state.refills) return;
      for (const rec of page.rows) {
        const key = keyOf(rec);
        if (key && state.ids.has(key)) continue;
        if (key) state.ids.add(key);
        state.history.push(rec);
      }
      state.next = page.next;
      state.done = !page.next;
      showQueryError(null);
    } catch (e) {
      if (generation !== state.generation) return;
      if (e.status === 400) { showQueryError(e.message, e.column); state.done = true; }
      else countLabel.textContent = "cannot load: " + e.message;
    } finally {
      // A refill meanwhile reset `loading` itself, and a page after it may be in flight.
      if (generation === state.generation && refills === state.refills) { state.loading = false; render(); }
    }
  }

  // `resuming`: the page was hidden with no stream; the first `open` refills from the log what
  // came meanwhile, as a reconnection does.
  function startLive(resuming) {
    if (state.source) state.source.close();
    state.liveStopped = false;
    // About two screens of rows a look: at a rate above that, the newest are what following
    // shows, and a gap refill brings the rest from the log.
    state.perLook = Math.max(50, Math.min(500, 2 * Math.ceil(viewport.clientHeight / ROW) + OVERSCAN));
    // Events no more often than the page draws live rows.
    const source = new EventSource("/api/live?" + new URLSearchParams({ q: state.query, rows: String(state.perLook), every: String(LIVE_RENDER_MS / 1000) }));
    state.source = source;
    const generation = state.generation;
    // Each event is an array of rows, oldest first (one look at the log).
    source.onmessage = (ev) => {
      if (generation !== state.generation) return;
      // Newest first: new rows go on top. Unless following (at the top, not paused), the
      // rows in view stay where they are: the shift is applied once per frame in renderNow,
      // since setting scrollTop per row would lay the page out thousands of times a second.
      const following = !state.paused && viewport.scrollTop < ROW && !state.shift;
      for (const rec of JSON.parse(ev.data)) {
        const key = keyOf(rec);
        if (key && state.ids.has(key)) continue;
        if (key) state.ids.add(key);
        state.live.push(rec);
        if (!following) { state.shift += ROW; state.unseen++; }
      }
      if (following && state.holes) trimLive();
      renderLive();
    };
    // `open` comes once the server has subscribed the stream to new records: the history read
    // after it overlaps the live rows (duplicates are dropped by id) rather than missing any.
    let opened = !!resuming;
    source.onopen = () => {
      if (generation !== state.generation) return;
      // Also when resuming: a page hidden before its first open has not read its history yet.
      if (!state.ready) { state.ready = true; render(); }
      if (!opened) { opened = true; return; }
      // Reconnected (the stream broke: the server restarted, a network hiccup): the records
      // written while it was down came on no stream; the log has them, as after a gap.
      state.reconnects++;
      state.gaps++;
      const following = !state.paused && viewport.scrollTop < ROW && !state.shift;
      if (following) refillSoon(); else { state.stale = true; render(); }
    };
    source.onerror = () => {
      if (generation !== state.generation) return;
      // No stream yet: the history is shown anyway (the browser keeps trying to connect, and
      // a reconnection refills the top).
      if (!opened) { opened = true; state.ready = true; render(); }
      // Closed for good (the server refused the stream, e.g. at `viewer.maxConnections`).
      if (source.readyState === EventSource.CLOSED) { state.liveStopped = true; render(); }
    };
    // More rows came in one look than a list takes (full load): the newest follow, the ones
    // before them are filled in from the log when someone could see them. Following, the top
    // shows the newest rows and the list below keeps only a few screens of them (`holes`):
    // it is made whole from the log when the reader scrolls down or pauses, so a followed
    // page costs the same at any exchange rate. Reading further down, the list is left alone
    // and marked stale until the reader goes back to the top.
    source.addEventListener("gap", (ev) => {
      if (generation !== state.generation) return;
      let skipped = 0, rowsWith = 0;
      try { const gap = JSON.parse(ev.data); skipped = gap.skipped || 0; rowsWith = gap.rows || 0; } catch (e) { skipped = 0; }
      state.gaps++;
      const following = !state.paused && viewport.scrollTop < ROW && !state.shift;
      if (following) {
        state.holes = true; trimLive(); renderLive();
        // No rows came after it: the records left out are the newest, and the top is theirs.
        if (rowsWith === 0) refillSoon();
        return;
      }
      state.stale = true;
      state.unseen += skipped;
      render();
    });
  }

  // Following with holes: the newest two looks' worth of live rows are all anyone sees.
  function trimLive() {
    const keep = 2 * state.perLook;
    if (state.live.length <= keep) return;
    for (const rec of state.live.slice(0, state.live.length - keep)) { const key = keyOf(rec); if (key) state.ids.delete(key); }
    state.live = state.live.slice(-keep);
  }

  let refillTimer = null, lastRefill = 0;
  function refillSoon() {
    if (refillTimer) return;
    const wait = Math.max(0, 1000 - (Date.now() - lastRefill));
    refillTimer = setTimeout(() => { refillTimer = null; lastRefill = Date.now(); refillTop(); }, wait);
  }

  // The list after a gap: the newest REFILL records from the log, then the live rows that
  // came while they were fetched; the live stream stays open. Older rows load from the
  // page's cursor when scrolled to.
  async function refillTop() {
    const generation = state.generation;
    // Rows after this one came while the page was fetched (by object: trimLive may drop
    // rows from the front meanwhile, so an index would move).
    const mark = state.live[state.live.length - 1];
    const gapsBefore = state.gaps;
    let page;
    try {
      page = JSON.parse(await api("/api/records?" + new URLSearchParams({ q: state.query, limit: String(REFILL) })));
    } catch (e) {
      if (generation === state.generation) reload();
      return;
    }
    if (generation !== state.generation) return;
    state.refills++;
    const ids = new Set();
    for (const rec of page.rows) { const key = keyOf(rec); if (key) ids.add(key); }
    const at = mark === undefined ? -1 : state.live.lastIndexOf(mark);
    state.live = state.live.slice(at + 1).filter((rec) => !keyOf(rec) || !ids.has(keyOf(rec)));
    for (const rec of state.live) { const key = keyOf(rec); if (key) ids.add(key); }
    state.ids = ids;
    state.history = page.rows;
    state.next = page.next;
    state.done = !page.next;
    state.loading = false;
    // A gap while the page was fetched left rows out after it: the list stays marked.
    if (state.gaps === gapsBefore) { state.stale = false; state.holes = false; }
    state.unseen = 0; state.shift = 0; newerButton.hidden = true;
    render();
  }

  // Back at the top of a list that missed rows: it is loaded again from the log.
  function refillIfStale() { if (state.stale) refillSoon(); }

  // A hidden page (another tab, a minimised window) holds no live stream: the proxy makes no
  // rows for it and the page parses none. Shown again, it opens the stream and fills in from
  // the log what came meanwhile.
  document.addEventListener("visibilitychange", () => {
    if (document.hidden) {
      if (state.source) { state.source.close(); state.source = null; state.suspended = true; }
    } else if (state.suspended) {
      state.suspended = false;
      startLive(true);
    }
  });

  // A query typed in the box: checked first (parsing only, no records read); a bad one is
  // shown with its column and the list goes on as it was, following the query it had. A check
  // that a newer text overtook is dropped, so the list always ends on the last text typed.
  let checking = 0, lastTyped = null;
  async function applyQuery(text) {
    lastTyped = text;
    qNote.hidden = true;
    const attempt = ++checking;
    let refused = null;
    try { await api("/api/query?" + new URLSearchParams({ q: text })); }
    catch (e) { if (e.status === 400) refused = e; }
    if (attempt !== checking) return;
    if (refused) {
      showQueryError(refused.message, refused.column);
      // A bad query in the page's address: the list shows everything meanwhile.
      if (state.generation === 0) reload();
      return;
    }
    showQueryError(null);
    state.query = text;
    reload();
  }

  // A fresh list and stream for `state.query`, which is in the URL.
  function reload() {
    state.generation++;
    const url = new URL(location.href);
    if (state.query) url.searchParams.set("q", state.query); else url.searchParams.delete("q");
    history.replaceState(null, "", url);
    harLink.href = "/api/har?" + new URLSearchParams({ q: state.query });
    state.live = []; state.history = []; state.ids = new Set(); state.next = null; state.done = false; state.loading = false;
    state.unseen = 0; state.shift = 0; newerButton.hidden = true; state.stale = false; state.holes = false;
    state.ready = false; state.liveStopped = false;
    viewport.scrollTop = 0;
    if (document.hidden) {
      // No stream while hidden (opened in a background tab, or a reload meanwhile): the
      // history loads now, and showing the page opens the stream and fills in the top.
      if (state.source) { state.source.close(); state.source = null; }
      state.suspended = true;
      state.ready = true;
    } else {
      state.suspended = false;
      startLive();
    }
    render();
  }

  let typing = null;
  qInput.value = state.query;
  qInput.addEventListener("input", () => {
    clearTimeout(typing);
    // A query held from a link followed from another site runs on Enter only.
    typing = setTimeout(() => { if (qNote.hidden && qInput.value !== lastTyped) applyQuery(qInput.value); }, 300);
  });
  qInput.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { clearTimeout(typing); applyQuery(qInput.value); }
  });
  followButton.addEventListener("click", () => {
    state.paused = !state.paused;
    followButton.textContent = state.paused ? "Paused" : "Following";
    followButton.classList.toggle("paused", state.paused);
    // To the top: a shift still waiting for the next redraw would move the list off it again.
    if (!state.paused) { viewport.scrollTop = 0; state.shift = 0; newerButton.hidden = true; state.unseen = 0; refillIfStale(); }
    else if (state.holes) refillSoon();
  });
  newerButton.addEventListener("click", () => { viewport.scrollTop = 0; state.shift = 0; newerButton.hidden = true; state.unseen = 0; refillIfStale(); });

  // Arrow keys move the selection; the list scrolls to keep it in view.
  viewport.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    const current = state.selected.length ? rowIndex(state.selected[state.selected.length - 1]) : -1;
    const index = Math.max(0, Math.min(rowCount() - 1, current + (ev.key === "ArrowDown" ? 1 : -1)));
    if (!rowAt(index)) return;
    const top = index * ROW;
    if (top < viewport.scrollTop) viewport.scrollTop = top;
    else if (top + ROW > viewport.scrollTop + viewport.clientHeight) viewport.scrollTop = top + ROW - viewport.clientHeight;
    select(rowAt(index), false);
  });

  // ---- selection, detail, actions ----
  function select(rec, add) {
    if (!rec) return;
    if (add) {
      state.selected = state.selected.includes(rec) ? state.selected.filter((r) => r !== rec) : state.selected.concat([rec]).slice(-2);
    } else {
      state.selected = [rec];
    }
    diffButton.disabled = state.selected.length !== 2 || state.selected.some((r) => !r.id);
    render();
    if (!add || state.selected.length === 1) showDetail(rec);
  }

  async function showDetail(rec) {
    state.current = rec;
    detail.textContent = "";
    if (rec.kind === "loss") {
      detail.append(el("h2", null, "Loss"), el("div", "banner failure",
        rec.lost + " exchange" + (rec.lost == 1 ? " was" : "s were") + " not recorded" + (rec.reason ? ": " + rec.reason : "")));
      return;
    }
    detail.append(el("p", "hint", "loading " + rec.id + " …"));
    let text;
    try { text = await api("/api/record?" + new URLSearchParams({ id: rec.id })); }
    catch (e) { detail.textContent = ""; detail.append(el("div", "banner error", e.message)); return; }
    if (state.current !== rec) return;
    renderDetail(rec, text, parseExact(text));
  }

  function headsTable(message) {
    const table = el("table", "heads");
    const headers = get(message, "headers");
    for (const pair of headers && headers.t === "a" ? headers.a : []) {
      if (pair.t !== "a" || pair.a.length < 2) continue;
      const tr = el("tr");
      const value = scalar(pair.a[1]);
      tr.append(el("td", null, scalar(pair.a[0])), el("td", value === "[redacted]" ? "redacted" : null, value));
      table.append(tr);
    }
    return table;
  }

  function waterfall(record) {
    const names = ["dns", "connect", "tls", "send", "wait", "receive", "serialization"];
    const phases = names.map((name) => {
      const node = name === "serialization" ? get(record, "timeline", "serializationDuration") : get(record, "metrics", name);
      return { name, seconds: isNull(node) ? null : Math.max(0, Number(node.v)) };
    });
    const total = phases.reduce((s, p) => s + (p.seconds || 0), 0);
    const box = el("div", "waterfall");
    let offset = 0;
    for (const p of phases) {
      const track = el("div", "track");
      if (p.seconds !== null && total > 0) {
        const bar = el("div", "bar p-" + p.name);
        bar.style.left = (100 * offset / total) + "%";
        bar.style.width = (100 * p.seconds / total) + "%";
        bar.title = p.name + ": " + (p.seconds * 1000).toFixed(3) + " ms (from " + (offset * 1000).toFixed(3) + " ms)";
        track.append(bar);
        offset += p.seconds;
      }
      box.append(el("span", null, p.name), el("span", "ms", p.seconds === null ? "-" : (p.seconds * 1000).toFixed(3) + " ms"), track);
    }
    const totalNode = get(record, "timeline", "totalDuration");
    if (!isNull(totalNode)) box.append(el("span", null, "total"), el("span", "ms", (Number(totalNode.v) * 1000).toFixed(3) + " ms"), el("span"));
    return box;
  }

  function valueView(node, holder) {
    holder.textContent = "";
    // Tree; Pretty, indented text; Raw, the value as logged (compact JSON, numbers and key
    // order as sent; a string's own text).
    if (holder.dataset.mode === "pretty") holder.append(el("pre", null, prettyText(node)));
    else if (holder.dataset.mode === "raw") holder.append(el("pre", "raw-value", node.t === "s" ? node.v : compactText(node)));
    else holder.append(tree(node));
  }

  function renderDetail(rec, text, record) {
    detail.textContent = "";
    const kind = scalar(get(record, "kind")) || "http";
    const request = get(record, "request"), response = get(record, "response");
    const method = scalar(get(request, "method")) || (kind === "tunnel" ? "CONNECT" : "");
    const url = scalar(get(request, "url")) || scalar(get(record, "target")) || "";
    const status = scalar(get(response, "status")) || scalar(get(record, "status"));
    detail.append(el("h2", null, kind === "wsMessage" ? "WebSocket message from the " + (scalar(get(record, "direction")) || "?")
      : (kind !== "http" ? kind + " " : "") + method + " " + url + (status ? " → " + status + " " + (scalar(get(response, "reason")) || "") : "")));
    const facts = el("div", "facts");
    facts.append(rec.id + "  ");
    for (const [label, node] of [["client", get(record, "client")], ["upstream", get(record, "metrics", "upstream")], ["rule", get(record, "rule")], ["serializer", get(record, "serializer")]]) {
      if (!isNull(node)) facts.append(label + " " + scalar(node) + "  ");
    }
    const replayOf = scalar(get(record, "replayOf"));
    if (replayOf) {
      const link = el("a", "replay-of", "replay of " + replayOf);
      link.addEventListener("click", () => {
        const original = state.live.find((r) => r.id === replayOf) || state.history.find((r) => r.id === replayOf) || { id: replayOf, kind: "http" };
        select(original, false);
      });
      facts.append(link);
    }
    detail.append(facts);

    // Failures first: what went wrong is what one opens a record for.
    const error = get(record, "error");
    if (!isNull(error)) {
      detail.append(el("div", "banner error", "transport error " + (scalar(get(error, "code")) || scalar(error) || "") + ": " + (scalar(get(error, "message")) || "")));
    }
    const failure = get(record, "result", "failure");
    if (!isNull(failure)) {
      const reason = scalar(get(failure, "reason"));
      detail.append(el("div", "banner failure", (scalar(get(failure, "error")) || scalar(failure) || "failure") + (reason ? " (" + reason + ")" : "") + "\n" + (scalar(get(failure, "message")) || "")));
    }
    if (kind === "wsMessage") {
      const connection = scalar(get(record, "connection"));
      const note = el("div", "banner note", "WebSocket " + (scalar(get(record, "opcode")) || "") + " message from the " + (scalar(get(record, "direction")) || "?") +
        ", " + fmtSize(scalar(get(record, "size"))) + ", of ");
      const link = el("a", "connection", "connection " + (connection || "?"));
      link.addEventListener("click", () => {
        const found = state.live.find((r) => r.id === connection) || state.history.find((r) => r.id === connection) || { id: connection, kind: "websocket" };
        select(found, false);
      });
      note.append(link);
      detail.append(note);
    }
    if (kind === "tunnel" || kind === "websocket") {
      detail.append(el("div", "banner note", kind + " to " + (scalar(get(record, "target")) || "") + ": " + fmtSize(scalar(get(record, "bytesFromClient"))) + " from the client, " +
        fmtSize(scalar(get(record, "bytesFromUpstream"))) + " from upstream, " + fmtMs(scalar(get(record, "duration"))) + ", closed by " + (scalar(get(record, "closedBy")) || "?") +
        (kind === "tunnel" ? " (encrypted: not decoded)" : " (frames relayed, not decoded)")));
    }

    const actions = el("div", "actions");
    const modes = el("span", "modes");
    const modeButtons = ["tree", "pretty", "raw"].map((mode) => {
      const button = el("button", mode === "tree" ? "on" : null, mode.charAt(0).toUpperCase() + mode.slice(1));
      button.type = "button";
      button.id = "view-" + mode;
      button.dataset.mode = mode;
      modes.append(button);
      return button;
    });
    actions.append(modes);
    if (kind === "http" && request) {
      const curlButton = el("button", null, "Copy as curl");
      curlButton.type = "button"; curlButton.id = "copy-curl";
      curlButton.addEventListener("click", () => copyCurl(rec));
      actions.append(curlButton);
      const replayButton = el("button", null, "Replay");
      replayButton.type = "button"; replayButton.id = "replay";
      replayButton.disabled = readOnly;
      if (readOnly) replayButton.title = "tapwire view is read-only";
      replayButton.addEventListener("click", () => replay(rec));
      actions.append(replayButton);
    }
    detail.append(actions);
    const out = el("div", "action-output");
    out.id = "action-output";
    detail.append(out);

    const holders = [];
    const addValue = (title, node) => {
      detail.append(el("h3", null, title));
      const holder = el("div", "value");
      holder.dataset.mode = "tree";
      holders.push([holder, node]);
      valueView(node, holder);
      detail.append(holder);
    };
    if (kind === "http") {
      detail.append(el("h3", null, "Timeline"), waterfall(record));
    }
    if (kind === "wsMessage") {
      const success = get(record, "result", "success");
      if (success !== undefined) addValue("Message (" + (scalar(get(record, "opcode")) || "") + ", " + scalar(get(record, "size")) + " bytes)", success);
    }
    if (request) {
      detail.append(el("h3", null, "Request " + method + " " + url + " " + (scalar(get(request, "httpVersion")) || "")), headsTable(request));
      const body = get(request, "body");
      if (body !== undefined) addValue("Request body (" + scalar(get(request, "bodySize")) + " bytes on the wire)", body);
      else if (get(request, "bodyError")) detail.append(el("div", "banner failure", "request body not readable: " + compactText(get(request, "bodyError"))));
    }
    if (response) {
      detail.append(el("h3", null, "Response " + (scalar(get(response, "httpVersion")) || "") + " " + status + " " + (scalar(get(response, "reason")) || "")), headsTable(response));
      const data = get(record, "data");
      const notes = [];
      if (!isNull(get(response, "bodySize"))) notes.push(scalar(get(response, "bodySize")) + " bytes on the wire");
      if (!isNull(get(data, "size"))) notes.push(scalar(get(data, "size")) + " decoded");
      if (!isNull(get(data, "contentEncoding"))) notes.push(scalar(get(data, "contentEncoding")));
      if (scalar(get(data, "truncated")) === "true") notes.push("truncated");
      const success = get(record, "result", "success");
      if (success !== undefined && scalar(get(record, "serializer")) !== "none") addValue("Value (" + (scalar(get(record, "serializer")) || "") + "; " + notes.join(", ") + ")", success);
      else detail.append(el("h3", null, "Body (" + notes.join(", ") + ")"));
    } else if (kind === "http") {
      detail.append(el("h3", null, "Response"), el("p", "hint", "no response"));
    }
    if (kind !== "http") addValue("Record", record);
    const rawRecord = el("details");
    rawRecord.append(el("summary", null, "record as logged"), el("pre", "raw-record", text));
    detail.append(el("h3", null, "Record"), rawRecord);

    for (const button of modeButtons) {
      button.addEventListener("click", () => {
        for (const other of modeButtons) other.className = other === button ? "on" : "";
        for (const [holder, node] of holders) { holder.dataset.mode = button.dataset.mode; valueView(node, holder); }
      });
    }
  }

  async function copyCurl(rec) {
    const out = $("action-output");
    try {
      const text = await api("/api/curl?" + new URLSearchParams({ id: rec.id }));
      out.textContent = "";
      const pre = el("pre", "curl-text", text);
      pre.id = "curl-text";
      out.append(pre);
      try { await navigator.clipboard.writeText(text); out.append(el("div", "hint", "copied to the clipboard")); }
      catch (e) { out.append(el("div", "hint", "select the text above to copy it")); }
    } catch (e) { out.textContent = ""; out.append(el("div", "banner error", e.message)); }
  }

  async function replay(rec) {
    const out = $("action-output");
    out.textContent = "";
    try {
      const response = await fetch("/api/replay", {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Tapwire-Token": token },
        body: new URLSearchParams({ id: rec.id }),
      });
      const body = JSON.parse(await response.text());
      if (!response.ok) throw new Error(body.error || response.statusText);
      const note = el("div", "banner note", "replayed → " + body.status + "; the new record (↻) links back to this one");
      note.id = "replay-result";
      out.append(note);
    } catch (e) { out.append(el("div", "banner error", "replay failed: " + e.message)); }
  }

  diffButton.addEventListener("click", async () => {
    const [a, b] = state.selected;
    if (!a || !b) return;
    detail.textContent = "";
    detail.append(el("h2", null, "Diff " + a.id + " → " + b.id));
    try {
      const body = JSON.parse(await api("/api/diff?" + new URLSearchParams({ a: a.id, b: b.id })));
      const box = el("div", "diff");
      box.id = "diff-lines";
      if (!body.lines.length) box.append(el("p", "hint", "no differences"));
      for (const line of body.lines) box.append(el("div", "diffline", line));
      detail.append(box);
    } catch (e) { detail.append(el("div", "banner error", e.message)); }
  });

  // The query in the page's address goes through the same check as a typed one. A link followed
  // from another site does not run its query by itself: any site can link here, and a query
  // can be made to read the whole history slowly (a backtracking regular expression). It waits
  // in the box, out of the address, for the reader to press Enter; the list shows everything.
  const initialQuery = state.query;
  state.query = "";
  if (linkedFromElsewhere && initialQuery) {
    qInput.value = initialQuery;
    lastTyped = initialQuery;
    qNote.textContent = "This link came from another site: its query has not run. Press Enter to run it.";
    qNote.hidden = false;
    reload();
  } else {
    applyQuery(initialQuery);
  }
})();
