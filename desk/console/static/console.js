// deskd console: the operator's live view of the desks, talking to the
// HTTP API alone (same origin, the operator's cookie or an open API).
// Every text from the API goes into the page as text, never as HTML.
"use strict";

(() => {
  const SCRIPTED_LABEL = "SCRIPTED (offline test model)";
  const MAX_EVENTS = 500;
  const TOPICS = [
    "desk.started", "desk.stopped", "session.started", "session.summarized", "session.torn",
    "memory.folded", "skills.reviewed", "rollover.failed", "trigger.queued", "trigger.dropped",
    "inbox.rejected", "turn.started", "turn.completed", "model.failed", "turn.failed",
    "turn.interrupted", "schedule.missed", "budget.exceeded", "desk.paused", "desk.resumed",
    "config.reloaded", "config.rejected", "storage.failed", "storage.recovered", "file.torn",
    "memory.unreadable", "memory.restored", "skills.undone", "trigger.acknowledged",
    "tool.called", "approval.requested", "approval.decided", "mcp.server.up", "mcp.server.down",
  ];
  // APPROVAL_TOPICS change the list of tool calls that wait for a decision.
  const APPROVAL_TOPICS = new Set(["approval.requested", "approval.decided", "desk.paused"]);
  const ERROR_TOPICS = new Set(["turn.failed", "model.failed", "rollover.failed", "storage.failed"]);
  const CLEARS_ERROR = new Set(["turn.completed", "storage.recovered"]);

  const state = {
    desks: new Map(),      // name -> Status
    lastError: new Map(),  // name -> {topic, at, text}
    globalRejected: [],
    events: [],            // newest first
    feedPaused: false,
    source: null,
    refreshTimers: new Map(),
    seenIds: new Set(),    // event ids already shown
    route: { view: "overview", desk: "" },
    standbyPage: false,    // the open desk page is of a desk this host stands by for (its parts not loaded)
    by: "console",
    timeZone: "",          // the trading time zone, from GET /v1/desks
    clockOffset: 0,        // deskd's clock minus the browser's, in ms (as_of)
    approvals: new Map(),  // desk name -> the tool calls that wait for a decision (GET /v1/approvals)
    approvalsOff: "",      // why there are none to show: approvals not configured, say
  };

  const $ = (id) => document.getElementById(id);

  // el builds an element: el("td", {class: "x"}, "text", child, ...).
  function el(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") n.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) n.addEventListener(ev, fn);
      else if (k === "dataset") Object.assign(n.dataset, v);
      else n.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      n.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return n;
  }

  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }

  // ---- API ---------------------------------------------------------------

  // api calls the HTTP API and returns {ok, status, data, error}; a 401
  // shows the sign-in form.
  async function api(method, path, body) {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body || {});
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (err) {
      return { ok: false, status: 0, error: "deskd cannot be reached: " + err.message };
    }
    let data = null;
    const text = await resp.text();
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (resp.ok) return { ok: true, status: resp.status, data };
    const error = (data && data.error) || (resp.status + " " + resp.statusText + (text && !data ? ": " + text.slice(0, 200) : ""));
    if (resp.status === 401 && path !== "/v1/login") showSignIn();
    return { ok: false, status: resp.status, data, error };
  }

  const deskPath = (name, rest) => "/v1/desks/" + encodeURIComponent(name) + (rest || "");

  // ---- time --------------------------------------------------------------

  // zoned adds the trading time zone to toLocale* options, when deskd
  // named one the browser knows.
  function zoned(opts) {
    if (!state.timeZone) return opts;
    try { new Intl.DateTimeFormat(undefined, { timeZone: state.timeZone }); } catch (e) { return opts; }
    return Object.assign({ timeZone: state.timeZone }, opts);
  }

  function fmtTime(s) {
    if (!s) return "";
    const d = new Date(s);
    if (isNaN(d)) return String(s);
    return d.toLocaleString(undefined, zoned({ month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }));
  }

  function fmtClock(s) {
    const d = new Date(s);
    if (isNaN(d)) return String(s || "");
    return d.toLocaleTimeString(undefined, zoned({ hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }));
  }

  // noteClock keeps how far deskd's clock (which --clock-start may have
  // moved) is from the browser's, from a status's as_of, so that elapsed
  // times are measured on deskd's clock.
  function noteClock(s) {
    const t = s && Date.parse(s.as_of);
    if (t && !isNaN(t)) state.clockOffset = t - Date.now();
  }

  function fmtElapsed(since) {
    const t = Date.parse(since);
    if (isNaN(t)) return "";
    let s = Math.max(0, Math.floor((Date.now() + state.clockOffset - t) / 1000));
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    const pad = (x) => String(x).padStart(2, "0");
    return h ? h + ":" + pad(m) + ":" + pad(s) : m + ":" + pad(s);
  }

  // fmtLeft is the time from deskd's now to until ("1:23"), or "expired".
  function fmtLeft(until) {
    const t = Date.parse(until);
    if (isNaN(t)) return "";
    const s = Math.floor((t - Date.now() - state.clockOffset) / 1000);
    if (s <= 0) return "expired";
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function tick() {
    for (const n of document.querySelectorAll("[data-since]")) n.textContent = fmtElapsed(n.dataset.since);
    for (const n of document.querySelectorAll("[data-until]")) n.textContent = fmtLeft(n.dataset.until);
  }

  // ---- notices -----------------------------------------------------------

  let toastTimer = 0;
  function toast(text, bad) {
    const t = $("toast");
    t.textContent = text;
    t.className = "toast" + (bad ? " toast-bad" : "");
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 9000 : 4000);
  }

  // ---- dialog ------------------------------------------------------------

  // ask shows the in-page dialog and resolves with the fields' values, or
  // null when cancelled. run, when given, is called with the values and
  // keeps the dialog open on its error text.
  function ask({ title, message, fields = [], confirm = "Confirm", danger = false, run }) {
    const dlg = $("dialog");
    $("dialog-title").textContent = title;
    $("dialog-message").textContent = message || "";
    const box = clear($("dialog-fields"));
    const inputs = {};
    fields.forEach((f, i) => {
      const id = "dialog-f-" + i;
      const input = f.multiline
        ? el("textarea", { id, name: f.name, rows: 3, required: f.required })
        : el("input", { id, name: f.name, type: "text", required: f.required, autocomplete: "off" });
      input.value = f.value || "";
      inputs[f.name] = input;
      box.append(el("label", { for: id }, f.label), input);
    });
    const err = $("dialog-error");
    err.hidden = true;
    const ok = $("dialog-confirm");
    ok.textContent = confirm;
    ok.className = "btn " + (danger ? "btn-danger" : "btn-primary");
    ok.disabled = false;
    return new Promise((resolve) => {
      const form = $("dialog-form");
      const done = (v) => {
        form.removeEventListener("submit", onSubmit);
        $("dialog-cancel").removeEventListener("click", onCancel);
        dlg.removeEventListener("cancel", onCancel);
        if (dlg.open) dlg.close();
        resolve(v);
      };
      const onCancel = (e) => { e.preventDefault(); done(null); };
      const onSubmit = async (e) => {
        e.preventDefault();
        const values = {};
        for (const [k, input] of Object.entries(inputs)) values[k] = input.value.trim();
        for (const f of fields) {
          if (f.required && !values[f.name]) {
            err.textContent = f.label + " is required.";
            err.hidden = false;
            inputs[f.name].focus();
            return;
          }
        }
        if (!run) { done(values); return; }
        ok.disabled = true;
        const res = await run(values);
        ok.disabled = false;
        if (res && !res.ok) {
          err.textContent = res.error;
          err.hidden = false;
          return;
        }
        done(values);
      };
      form.addEventListener("submit", onSubmit);
      $("dialog-cancel").addEventListener("click", onCancel);
      dlg.addEventListener("cancel", onCancel);
      dlg.showModal();
      // A dialog without fields opens on Cancel: a second Enter (the one
      // that opened it, repeated) must not confirm it. One with fields
      // opens on its first field (the kill switch's reason), where Enter
      // confirms nothing either.
      const first = !fields.length ? $("dialog-cancel") : inputs[fields[0].name];
      first.focus();
    });
  }

  // ---- actions -----------------------------------------------------------

  function pauseDesk(name) {
    return ask({
      title: "Pause desk " + name,
      message: "Kill switch: the desk runs no new turn until it is resumed. A running turn finishes.",
      fields: [
        { name: "reason", label: "Reason", required: true, multiline: true },
        { name: "by", label: "Paused by", value: state.by },
      ],
      confirm: "Pause desk",
      danger: true,
      run: async (v) => {
        if (v.by) state.by = v.by;
        const res = await api("POST", deskPath(name, "/pause"), { reason: v.reason, by: v.by || state.by });
        if (res.ok) { toast("Desk " + name + " paused."); refreshDesk(name); }
        return res;
      },
    });
  }

  function resumeDesk(name) {
    return ask({
      title: "Resume desk " + name,
      message: "The desk takes up its queued triggers and scheduled slots again.",
      fields: [{ name: "by", label: "Resumed by", value: state.by }],
      confirm: "Resume desk",
      run: async (v) => {
        if (v.by) state.by = v.by;
        const res = await api("POST", deskPath(name, "/resume"), { by: v.by || state.by });
        if (res.ok) { toast("Desk " + name + " resumed."); refreshDesk(name); }
        return res;
      },
    });
  }

  function rolloverDesk(name) {
    return ask({
      title: "Roll over desk " + name,
      message: "Ends the current session (summarised, folded into Memory.md) and starts a new one.",
      confirm: "Roll over",
      run: async () => {
        const res = await api("POST", deskPath(name, "/rollover"), {});
        if (res.ok) { toast("Desk " + name + " rolled over" + (res.data && res.data.session ? " to session " + res.data.session : "") + "."); refreshDesk(name); }
        return res;
      },
    });
  }

  function ackTrigger(name, trig) {
    return ask({
      title: "Acknowledge interrupted trigger " + trig.id,
      message: "Its turn was cut off during its model call and may have acted. Note what you decided.",
      fields: [
        { name: "note", label: "Note", multiline: true },
        { name: "by", label: "Acknowledged by", value: state.by },
      ],
      confirm: "Acknowledge",
      run: async (v) => {
        if (v.by) state.by = v.by;
        const res = await api("POST", deskPath(name, "/triggers/" + encodeURIComponent(trig.id) + "/ack"), { by: v.by || state.by, note: v.note });
        if (res.ok) { toast("Trigger " + trig.id + " acknowledged."); refreshDesk(name); }
        else if (res.status === 404 || res.status === 405) res.error = "Acknowledging is not available on this deskd (" + res.error + ")";
        return res;
      },
    });
  }

  // ---- approvals ---------------------------------------------------------

  // argsText is a call's arguments, pretty-printed as text.
  function argsText(args) {
    if (args === undefined || args === null) return "{}";
    return typeof args === "string" ? args : JSON.stringify(args, null, 2);
  }

  // decideCall approves or denies a waiting call through the dialog; a
  // denial asks for a reason, which the model hears. deskd's refusal (the
  // call was decided already, or expired) stays in the dialog.
  function decideCall(a, approve) {
    const verb = approve ? "approve" : "deny";
    const fields = [{ name: "by", label: approve ? "Approved by" : "Denied by", value: state.by }];
    if (!approve) fields.unshift({ name: "reason", label: "Reason (the model hears it)", required: true });
    return ask({
      title: (approve ? "Approve" : "Deny") + " call " + a.id + " of desk " + a.desk,
      message: (approve ? "It runs now: " : "It does not run: ") + a.tool + " " + JSON.stringify(a.arguments ?? {}),
      fields,
      confirm: approve ? "Approve call" : "Deny call",
      danger: approve,
      run: async (v) => {
        if (v.by) state.by = v.by;
        const res = await api("POST", deskPath(a.desk, "/approvals/" + encodeURIComponent(a.id) + "/" + verb), { reason: v.reason || "", by: v.by || state.by });
        if (res.ok) { toast("Call " + a.id + " " + (approve ? "approved" : "denied") + "."); }
        else res.error = "deskd refused: " + res.error;
        scheduleApprovals();
        return res;
      },
    });
  }

  // approvalList is the block of a desk's calls that wait for a decision
  // (problems says how many): tool, arguments (as text), time left,
  // Approve and Deny.
  function approvalList(name) {
    const list = state.approvals.get(name) || [];
    if (!list.length) return null;
    return el("div", { class: "approvals", "data-desk": name },
      el("ul", { class: "approval-list" }, list.map((a) => el("li", { class: "approval", "data-approval": a.id },
        el("div", { class: "approval-head" },
          el("span", { class: "mono small approval-tool" }, a.tool), " ",
          el("span", { class: "mono small muted" }, a.id), " ",
          el("span", { class: "small" }, "expires in ", el("span", { class: "mono approval-left", dataset: { until: a.expires_at } }, fmtLeft(a.expires_at)))),
        el("pre", { class: "approval-args" }, argsText(a.arguments)),
        el("div", { class: "actions" },
          el("button", { type: "button", class: "btn btn-small btn-approve", "data-action": "approve", on: { click: () => decideCall(a, true) } }, "Approve"),
          el("button", { type: "button", class: "btn btn-small btn-deny", "data-action": "deny", on: { click: () => decideCall(a, false) } }, "Deny"))))));
  }

  // loadApprovals reads every desk's waiting calls; a deskd without
  // approvals (404) shows none.
  async function loadApprovals() {
    const res = await api("GET", "/v1/approvals");
    state.approvals.clear();
    if (res.ok) {
      state.approvalsOff = "";
      for (const a of (res.data && res.data.approvals) || []) {
        if (!state.approvals.has(a.desk)) state.approvals.set(a.desk, []);
        state.approvals.get(a.desk).push(a);
      }
    } else state.approvalsOff = res.error;
    renderDesks();
  }

  let approvalsTimer = 0;
  function scheduleApprovals() {
    if (approvalsTimer) return;
    approvalsTimer = setTimeout(() => { approvalsTimer = 0; loadApprovals(); }, 100);
  }

  // mcpList shows the MCP servers a desk uses (its status's mcp): a server
  // that is not up in red, with its error.
  function mcpList(s) {
    if (!Array.isArray(s.mcp) || !s.mcp.length) return null;
    return el("ul", { class: "mcp-list" }, s.mcp.map((m) => el("li", { class: "mcp mcp-" + (m.state === "up" ? "up" : "down"), "data-server": m.name },
      el("span", { class: "mono small" }, m.name), " ",
      el("span", { class: "badge " + (m.state === "up" ? "badge-up" : "badge-bad") }, String(m.state || "unknown").toUpperCase()),
      m.state === "up" ? el("span", { class: "small muted" }, " " + (m.tools ? m.tools.length : 0) + " tools" + (m.restarts ? " · " + m.restarts + " restarts" : "")) : null,
      m.error ? el("div", { class: "small mcp-error" }, m.error) : null,
      m.state !== "up" && m.retry_at ? el("div", { class: "small muted" }, "retry at " + fmtTime(m.retry_at)) : null)));
  }

  // ---- desks -------------------------------------------------------------

  // problems lists a desk's troubles as [{level, text}], worst first.
  function problems(s) {
    const out = [];
    if (s.storage) out.push({ level: "bad", text: "Storage: " + s.storage.error + (s.storage.disk_full ? " (disk full)" : "") });
    if (s.config_rejected) {
      const c = s.config_rejected;
      out.push({ level: "bad", text: "Config rejected: " + [c.file, c.field].filter(Boolean).join(" ") + (c.reason ? ": " + c.reason : "") });
    }
    if (s.interrupted && s.interrupted.length) out.push({ level: "bad", text: s.interrupted.length + " interrupted trigger" + (s.interrupted.length > 1 ? "s" : "") });
    if (s.unreadable && s.unreadable.length) for (const u of s.unreadable) out.push({ level: "warn", text: "Unreadable: " + u.path + (u.error ? ": " + u.error : "") });
    const le = state.lastError.get(s.name);
    if (le) out.push({ level: "bad", text: "Last error (" + le.topic + ", " + fmtClock(le.at) + "): " + le.text });
    if (s.last_answer && s.last_answer.fallback) out.push({ level: "warn", text: "Answered by fallback model " + s.last_answer.model });
    const waiting = (state.approvals.get(s.name) || []).length;
    if (waiting) out.push({ level: "warn", text: waiting + (waiting > 1 ? " tool calls wait" : " tool call waits") + " for your decision" });
    if (s.calendar_ending) out.push({ level: s.calendar_days_left < 0 ? "bad" : "warn", text: calendarText(s) });
    if (Array.isArray(s.mcp)) for (const m of s.mcp) if (m.state !== "up") out.push({ level: "bad", text: "MCP server " + m.name + " " + (m.state || "down") + (m.error ? ": " + m.error : "") });
    return out;
  }

  function severity(s) {
    if ((state.approvals.get(s.name) || []).length) return 0; // an operator must decide
    const p = problems(s);
    if (p.some((x) => x.level === "bad")) return 0;
    if (s.state === "paused" || s.state === "stopped") return 1;
    if (p.length) return 2;
    if (s.state === "running" || s.state === "rolling_over") return 3;
    return 4;
  }

  function stateBadge(s) {
    const st = s.state || "unknown";
    return el("span", { class: "badge state-" + st.replace(/[^a-z_]/g, "") }, st.replace("_", " ").toUpperCase());
  }

  // modelCell shows the model that answered last, else the configured one.
  function modelCell(s) {
    const la = s.last_answer;
    const wrap = el("div", { class: "model" });
    if (la && la.model) {
      wrap.append(el("span", { class: "mono" }, la.model), " ", el("span", { class: "muted small" }, la.provider || ""));
      if (la.scripted) wrap.append(" ", el("span", { class: "badge badge-scripted", title: "the offline scripted test model answered" }, SCRIPTED_LABEL));
      if (la.fallback) wrap.append(" ", el("span", { class: "badge badge-fallback", title: "not the desk's primary model" }, "FALLBACK"));
      if (s.model && la.model !== s.model) wrap.append(el("div", { class: "muted small" }, "configured: " + s.model));
    } else {
      wrap.append(el("span", { class: "mono" }, s.model || "not available"), " ", el("span", { class: "muted small" }, s.provider || ""));
      if (s.scripted) wrap.append(" ", el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL));
      wrap.append(el("div", { class: "muted small" }, "configured (no answer yet)"));
    }
    return wrap;
  }

  function turnCell(s) {
    const r = s.running;
    const box = el("div", { class: "turn" });
    if (r) {
      const what = r.kind === "rollover" && !r.trigger ? "rollover" : (r.kind || "") + " " + (r.trigger || "");
      box.append(el("div", {}, el("span", { class: "badge badge-running" }, (r.phase || "running").toUpperCase()), " ", el("span", { class: "mono small" }, what.trim())));
      box.append(el("div", { class: "small" }, "elapsed ", el("span", { class: "mono", dataset: { since: r.since } }, fmtElapsed(r.since)),
        r.phase_since ? el("span", { class: "muted" }, " · phase ", el("span", { class: "mono", dataset: { since: r.phase_since } }, fmtElapsed(r.phase_since))) : null));
    } else {
      box.append(el("span", { class: "muted" }, "idle"));
    }
    box.append(el("div", { class: "small muted" }, "turns: ", el("span", { class: "turns mono" }, String(s.exchanges ?? 0))));
    return box;
  }

  function queueCell(s) {
    const full = s.queue_limit && s.queue_depth >= s.queue_limit;
    return el("span", { class: "mono nowrap" + (full ? " text-bad" : "") }, (s.queue_depth ?? 0) + " / " + (s.queue_limit ?? "?") + (full ? " FULL" : ""));
  }

  function marketCell(s) {
    if (s.market === "unknown") return el("span", { class: "market-unknown", title: "past the end of calendar " + s.calendar + " (" + s.calendar_through + "): its trading_days and market_hours slots are held" }, "UNKNOWN · " + s.calendar);
    if (s.market === "assumed_open" || s.market === "assumed_closed") {
      return el("span", { class: "market-unknown", title: "past the end of calendar " + s.calendar + " (" + s.calendar_through + "): assumed from its weekdays and sessions, no holidays known" },
        "assumed " + (s.market === "assumed_open" ? "open" : "closed") + " · " + s.calendar);
    }
    if (s.market_open === undefined || s.market_open === null) return el("span", { class: "muted" }, s.calendar ? s.calendar : "no calendar");
    return el("span", { class: s.market_open ? "market-open" : "market-closed" }, (s.market_open ? "OPEN" : "closed") + (s.calendar ? " · " + s.calendar : ""));
  }

  function pausedInfo(s) {
    const p = s.paused;
    if (!p) return null;
    return el("div", { class: "paused-info" },
      "by ", el("span", { class: "mono" }, p.by || "?"), " at " + fmtTime(p.at),
      p.reason ? el("div", { class: "reason" }, "“", p.reason, "”") : null);
  }

  function killSwitch(s) {
    if (s.paused || s.state === "paused") {
      return el("button", { type: "button", class: "btn btn-resume", "data-action": "resume", "data-desk": s.name, on: { click: () => resumeDesk(s.name) } }, "Resume");
    }
    return el("button", { type: "button", class: "btn btn-kill", "data-action": "pause", "data-desk": s.name, "aria-label": "Pause desk " + s.name, on: { click: () => pauseDesk(s.name) } }, "■ PAUSE");
  }

  function interruptedList(s) {
    if (!s.interrupted || !s.interrupted.length) return null;
    return el("ul", { class: "interrupted" }, s.interrupted.map((t) => el("li", {},
      el("span", { class: "mono small" }, t.id), " ",
      el("span", { class: "small" }, (t.text || "").slice(0, 80)), " ",
      el("button", { type: "button", class: "btn btn-small", "data-action": "ack", on: { click: () => ackTrigger(s.name, t) } }, "Acknowledge"))));
  }

  // shortSession is the tail of a session id (its random part), enough to
  // tell sessions apart in a row; the full id is the element's title.
  function shortSession(id) {
    if (!id) return "no session";
    const i = id.lastIndexOf("-");
    return i > 0 ? "…" + id.slice(i + 1) : id.slice(0, 16);
  }

  // ---- cluster -----------------------------------------------------------

  // ownerConsole is the URL of desk name's page on the console of its
  // owner, from the owner's API address (host:port, reached with this
  // page's scheme, or an http(s)://host:port URL); "" for any other
  // address (credentials, a path, a wildcard host): no link is made.
  function ownerConsole(addr, name) {
    let a = String(addr || "");
    if (!a) return "";
    if (!/^https?:\/\//.test(a)) a = location.protocol + "//" + a;
    let u;
    try { u = new URL(a); } catch (e) { return ""; }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || u.username || u.password || u.pathname !== "/" || u.search || u.hash) return "";
    if (!u.hostname || u.hostname === "0.0.0.0" || u.hostname === "[::]") return "";
    return u.origin + "/#/desk/" + encodeURIComponent(name);
  }

  // ownerInfo is the line that names a desk's owner on a cluster (null
  // without one): "owner a · epoch 7", "runs on host b · epoch 9" for a
  // desk this host stands by for.
  function ownerInfo(s) {
    if (!s.owner && s.state !== "standby") return null;
    if (!s.owner) return el("div", { class: "owner small muted", "data-owner": "" }, "no host owns it now");
    const o = s.owner;
    return el("div", { class: "owner small" + (s.state === "standby" ? " owner-away" : ""), "data-owner": o.host, title: "since " + fmtTime(o.since) },
      (s.state === "standby" ? "runs on host " : "owner ") + o.host + " · epoch " + o.epoch);
  }

  // ownerLink is a link to the desk's page on its owner's console, null
  // when the owner serves no address it may link to.
  function ownerLink(s, label) {
    const href = s.owner ? ownerConsole(s.owner.addr, s.name) : "";
    return href ? el("a", { class: "btn btn-small owner-link", href, rel: "noopener noreferrer" }, label || "Open on host " + s.owner.host) : null;
  }

  // standbyNote says on a standby desk's page where the desk runs.
  function standbyNote(s) {
    if (!s.owner) {
      return el("p", { class: "standby-note", role: "note" }, "This host stands by for desk " + s.name +
        ": no host of the cluster owns it now (the hosts contend for it). Its page shows here once a host takes it.");
    }
    const o = s.owner;
    const link = ownerLink(s, "Open desk " + s.name + " on host " + o.host);
    return el("div", { class: "standby-note", role: "note" },
      el("p", {}, "This host stands by for desk " + s.name + ": it runs on host " + o.host + " (epoch " + o.epoch + ", since " + fmtTime(o.since) +
        "). Its transcript, memory and controls are on that host" + (link ? ", whose console may ask you to sign in." : "; it serves no address this console can link to.")),
      link);
  }

  function deskRow(s) {
    const probs = problems(s);
    const sev = severity(s);
    const tr = el("tr", { class: "desk-row sev-" + sev, "data-desk": s.name });
    const cell = (label, ...c) => el("td", { "data-label": label }, el("div", { class: "cell" }, ...c));
    tr.append(
      cell("Desk", el("a", { class: "desk-name", href: "#/desk/" + encodeURIComponent(s.name) }, s.name), " ", stateBadge(s), pausedInfo(s), ownerInfo(s)),
      cell("Turn", turnCell(s)),
      cell("Model", modelCell(s)),
      cell("Queue", queueCell(s)),
      cell("Session", el("div", {}, s.trading_date || "not available"), el("div", { class: "mono small muted", title: s.session || "" }, shortSession(s.session))),
      cell("Schedule", s.next_slot ? el("div", {}, el("span", { class: "small" }, "next " + (s.next_schedule || "slot") + " "), el("span", { class: "mono small" }, fmtTime(s.next_slot))) : el("div", { class: "muted small" }, "no next slot"), el("div", { class: "small" }, marketCell(s))),
      cell("Attention", probs.length
        ? el("ul", { class: "problems" }, probs.map((p) => el("li", { class: "problem problem-" + p.level }, el("span", { class: "problem-tag" }, p.level === "bad" ? "PROBLEM" : "WARNING"), " ", p.text)))
        : el("span", { class: "ok-text" }, "✓ OK"), interruptedList(s), approvalList(s.name)),
      cell("Actions", s.state === "standby"
        ? el("div", { class: "actions" }, ownerLink(s), el("a", { class: "btn btn-small", href: "#/desk/" + encodeURIComponent(s.name) }, "Open"))
        : el("div", { class: "actions" }, killSwitch(s),
          el("button", { type: "button", class: "btn btn-small", on: { click: () => rolloverDesk(s.name) } }, "Roll over"),
          el("a", { class: "btn btn-small", href: "#/desk/" + encodeURIComponent(s.name) }, "Open"))),
    );
    return tr;
  }

  function sortedDesks() {
    const list = [...state.desks.values()];
    const by = $("sort").value;
    const name = (a, b) => a.name.localeCompare(b.name);
    if (by === "name") return list.sort(name);
    if (by === "state") return list.sort((a, b) => String(a.state).localeCompare(String(b.state)) || name(a, b));
    return list.sort((a, b) => severity(a) - severity(b) || name(a, b));
  }

  // rowCache keeps each desk's row and what it shows (the status, the
  // desk's last error, the time zone of its times): a row is rebuilt only
  // when one of them changed, and rows move only when
  // the order did, so a button never vanishes under the operator's
  // pointer, nor loses focus, because another desk's event came in.
  const rowCache = new Map();

  function rowOf(s) {
    const key = JSON.stringify([
      Object.assign({}, s, { as_of: undefined }),  // as_of changes at every fetch
      state.lastError.get(s.name) || null,
      state.timeZone,
      state.approvals.get(s.name) || null,
    ]);
    const had = rowCache.get(s.name);
    if (had && had.key === key) return had.tr;
    const tr = deskRow(s);
    if (had && had.tr.parentNode) had.tr.replaceWith(tr);
    rowCache.set(s.name, { key, tr });
    return tr;
  }

  function renderDesks() {
    const body = $("desk-rows");
    const list = sortedDesks();
    const rows = list.map(rowOf);
    for (const name of [...rowCache.keys()]) if (!state.desks.has(name)) { rowCache.get(name).tr.remove(); rowCache.delete(name); }
    const same = rows.length === body.children.length && rows.every((tr, i) => body.children[i] === tr);
    if (!same) body.replaceChildren(...rows);
    $("no-desks").hidden = list.length > 0;
    const count = (f) => list.filter(f).length;
    const hasBad = (s) => problems(s).some((p) => p.level === "bad");
    const sum = clear($("summary"));
    sum.append(
      el("span", { class: "pill" }, list.length + " desks"),
      el("span", { class: "pill pill-running" }, count((s) => s.state === "running" || s.state === "rolling_over") + " running"),
      el("span", { class: "pill" + (count((s) => s.paused) ? " pill-paused" : "") }, count((s) => s.paused) + " paused"),
      el("span", { class: "pill" + (count(hasBad) ? " pill-bad" : "") }, count(hasBad) + " with problems"));
    const standby = count((s) => s.state === "standby");
    if (standby) sum.append(el("span", { class: "pill pill-standby" }, standby + " standby"));
    const waiting = list.reduce((n, s) => n + (state.approvals.get(s.name) || []).length, 0);
    if (waiting) sum.append(el("span", { class: "pill pill-paused" }, waiting + " awaiting approval"));
    renderBanner();
    renderDeskFilter();
    if (state.route.view === "desk") renderDeskStatus();
  }

  // calendarText says when a desk's calendar ends (calendar_ending), and what to do.
  function calendarText(s) {
    const n = s.calendar_days_left, fix = " Add the exchange's published dates in calendars.d/" + s.calendar + ".yaml (extends: " + s.calendar + ", a later through).";
    if (n < 0) {
      return "Calendar " + s.calendar + " ended " + s.calendar_through + " (" + (-n) + " day" + (n === -1 ? "" : "s") + " ago): " +
        (s.market === "unknown" ? "trading_days and market_hours slots are held." : "the market is assumed from its weekdays, no holidays known.") + fix;
    }
    return "Calendar " + s.calendar + " ends " + s.calendar_through + (n === 0 ? ", today." : ", in " + n + " day" + (n === 1 ? "." : "s.")) + fix;
  }

  function renderBanner() {
    const b = $("banner");
    clear(b);
    const rej = state.globalRejected.filter((c) => !c.desk);
    const cals = new Map(); // one line per calendar, whatever the desks following it
    for (const s of state.desks.values()) if (s.calendar_ending && !cals.has(s.calendar)) cals.set(s.calendar, s);
    if (!rej.length && !cals.size) { b.hidden = true; return; }
    if (rej.length) b.append(el("strong", {}, "CONFIG REJECTED: "), rej.map((c) => el("span", {}, [c.file, c.field].filter(Boolean).join(" "), c.reason ? ": " + c.reason : "", " (since " + fmtTime(c.since) + "). deskd runs on its last good config. ")));
    for (const s of cals.values()) b.append(el("div", { class: "banner-calendar" }, el("strong", {}, "CALENDAR: "), calendarText(s)));
    b.hidden = false;
  }

  function renderDeskFilter() {
    const sel = $("filter-desk");
    const cur = sel.value;
    const names = [...state.desks.keys()].sort();
    const have = [...sel.options].slice(1).map((o) => o.value);
    if (names.join("\n") === have.join("\n")) return;
    while (sel.options.length > 1) sel.remove(1);
    for (const n of names) sel.append(el("option", { value: n }, n));
    sel.value = names.includes(cur) ? cur : "";
  }

  async function loadDesks() {
    const res = await api("GET", "/v1/desks");
    if (!res.ok) { if (res.status !== 401) toast("Desks: " + res.error, true); return false; }
    state.desks.clear();
    if (res.data && res.data.time_zone) { state.timeZone = res.data.time_zone; $("zone").textContent = "times in " + state.timeZone; }
    for (const s of (res.data && res.data.desks) || []) { noteClock(s); state.desks.set(s.name, s); }
    state.globalRejected = (res.data && Array.isArray(res.data.config_rejected)) ? res.data.config_rejected : [];
    renderDesks();
    scheduleApprovals();
    return true;
  }

  async function fetchDesk(name) {
    const res = await api("GET", deskPath(name));
    if (res.ok && res.data) { noteClock(res.data); state.desks.set(name, res.data); }
    else if (res.status === 404) state.desks.delete(name);
    renderDesks();
  }

  // refreshDesk fetches a desk's status soon, once for a burst of events.
  function refreshDesk(name) {
    if (!name) { scheduleFull(); return; }
    if (state.refreshTimers.has(name)) return;
    state.refreshTimers.set(name, setTimeout(() => { state.refreshTimers.delete(name); fetchDesk(name); }, 150));
  }

  let fullTimer = 0;
  function scheduleFull() {
    if (fullTimer) return;
    fullTimer = setTimeout(() => { fullTimer = 0; loadDesks(); }, 300);
  }

  // ---- events ------------------------------------------------------------

  function eventSummary(d) {
    const skip = new Set(["topic", "at", "desk", "id"]);
    return Object.entries(d).filter(([k, v]) => !skip.has(k) && v !== "" && v !== null && v !== false)
      .map(([k, v]) => k + "=" + (typeof v === "object" ? JSON.stringify(v) : String(v))).join("  ");
  }

  function topicClass(t) {
    if (ERROR_TOPICS.has(t) || /failed|rejected|torn|interrupted|dropped|missed|exceeded|unreadable/.test(t)) return "ev-bad";
    if (t === "desk.paused") return "ev-warn";
    if (t === "turn.completed" || t === "desk.resumed" || t === "storage.recovered") return "ev-good";
    return "";
  }

  function eventItem(d) {
    return el("li", { class: "event " + topicClass(d.topic), "data-topic": d.topic, "data-desk": d.desk || "" },
      el("span", { class: "ev-time mono" }, fmtClock(d.at)),
      el("span", { class: "ev-desk" }, d.desk || "deskd"),
      el("span", { class: "ev-topic mono" }, d.topic),
      el("span", { class: "ev-body" }, eventSummary(d)));
  }

  function matches(d) {
    const desk = $("filter-desk").value;
    const topic = $("filter-topic").value.trim().toLowerCase();
    return (!desk || d.desk === desk) && (!topic || d.topic.toLowerCase().includes(topic));
  }

  function renderEvents() {
    const list = clear($("events"));
    let shown = 0;
    for (const d of state.events) {
      if (!matches(d)) continue;
      list.append(eventItem(d));
      if (++shown >= MAX_EVENTS) break;
    }
    $("event-count").textContent = shown + " shown" + (state.feedPaused ? " · paused" : "");
  }

  function addEvent(d) {
    state.events.unshift(d);
    if (state.events.length > MAX_EVENTS * 2) state.events.length = MAX_EVENTS * 2;
    if (state.feedPaused || !matches(d)) return;
    const list = $("events");
    list.prepend(eventItem(d));
    while (list.children.length > MAX_EVENTS) list.lastChild.remove();
    $("event-count").textContent = list.children.length + " shown";
  }

  // seen reports whether the stream delivered the event id before (a new
  // EventSource after a closed one replays the ring), and remembers it.
  function seen(id) {
    if (!id) return false;
    if (state.seenIds.has(id)) return true;
    state.seenIds.add(id);
    if (state.seenIds.size > 8192) state.seenIds.delete(state.seenIds.values().next().value);
    return false;
  }

  function onEvent(msg) {
    if (seen(msg.lastEventId)) return;
    let d;
    try { d = JSON.parse(msg.data); } catch { return; }
    if (!d || typeof d !== "object") return;
    if (!d.topic) d.topic = msg.type;
    if (ERROR_TOPICS.has(d.topic) && d.desk) state.lastError.set(d.desk, { topic: d.topic, at: d.at, text: d.error || d.reason || "" });
    if (CLEARS_ERROR.has(d.topic) && d.desk) state.lastError.delete(d.desk);
    addEvent(d);
    if (APPROVAL_TOPICS.has(d.topic)) scheduleApprovals();
    if (d.topic === "config.rejected" || d.topic === "config.reloaded" || !d.desk) scheduleFull();
    else refreshDesk(d.desk);
    if (state.route.view === "desk" && d.desk === state.route.desk) deskPageEvent(d.topic);
  }

  function setConn(kind, text) {
    const c = $("conn");
    c.className = "conn conn-" + kind;
    c.textContent = "events: " + text; // the connection, never to be read as a model's name
  }

  // A closed stream is retried after RETRY_FIRST ms, doubling up to
  // RETRY_MAX while deskd cannot be reached or fails (status 0 or >= 500);
  // the delay starts over once the stream is live again.
  const RETRY_FIRST = 3000;
  const RETRY_MAX = 60000;
  let retryDelay = RETRY_FIRST;

  function connect() {
    if (state.source) state.source.close();
    const src = new EventSource("/v1/events?backlog=1");
    state.source = src;
    setConn("wait", "connecting…");
    src.onopen = () => { retryDelay = RETRY_FIRST; setConn("live", "● live"); scheduleFull(); };
    src.onerror = () => {
      if (src.readyState === EventSource.CLOSED) {
        // A closed stream (401, a restart): check the credential, then retry.
        setConn("wait", "reconnecting…");
        retry(src);
      } else setConn("wait", "reconnecting…");
    };
    src.onmessage = onEvent;
    for (const t of TOPICS) src.addEventListener(t, onEvent);
  }

  // retry checks the credential after retryDelay and opens the stream
  // again; while deskd cannot be reached or fails it tries again, the
  // delay doubling. A 401 shows the sign-in form (api does), which ends
  // the retries, as does a newer stream than src.
  function retry(src) {
    const delay = retryDelay;
    retryDelay = Math.min(retryDelay * 2, RETRY_MAX);
    setTimeout(async () => {
      if (state.source !== src) return;
      const c = await credential();
      if (state.source !== src) return;
      if (c.ok) { connect(); return; }
      if (c.status === 0 || c.status >= 500) {
        setConn("wait", "reconnecting… (deskd " + (c.status ? "answers " + c.status : "cannot be reached") + "; next try in " + Math.round(retryDelay / 1000) + " s)");
        retry(src);
        return;
      }
      setConn("off", "disconnected");
    }, delay);
  }

  // ---- desk page ---------------------------------------------------------

  function deskPageEvent(topic) {
    if (topic === "turn.completed" || topic === "turn.failed" || topic === "session.started" || topic === "turn.started") scheduleDeskPart("transcript");
    if (topic === "session.started" || topic === "session.summarized") scheduleDeskPart("sessions");
    if (topic === "memory.folded" || topic === "memory.restored") scheduleDeskPart("memory");
    if (topic === "skills.reviewed" || topic === "skills.undone") scheduleDeskPart("skills");
    if (topic === "session.summarized") scheduleDeskPart("summaries");
  }

  const partTimers = {};
  function scheduleDeskPart(part) {
    if (partTimers[part]) return;
    partTimers[part] = setTimeout(() => { partTimers[part] = 0; DESK_PARTS[part](state.route.desk); }, 400);
  }

  // onDesk reports whether desk name's page is still the one open: a
  // loader checks it after each await, so that a slow answer for one desk
  // never lands on another desk's page (nor its buttons act on the first).
  function onDesk(name) {
    return state.route.view === "desk" && state.route.desk === name;
  }

  function notAvailable(box, res) {
    clear(box).append(el("p", { class: "muted" }, res.status === 404 || res.status === 405
      ? "not available on this deskd (" + res.error + ")"
      : "could not load: " + res.error));
  }

  // renderDeskStatus redraws the desk page's status card, and leaves it
  // as it is when nothing in it changed: a card redrawn at every poll
  // would replace the link or button under the operator's pointer between
  // press and release, and the click would be lost.
  function renderDeskStatus() {
    const box = document.createElement("div");
    fillDeskStatus(box);
    const shown = $("dv-status");
    if (box.innerHTML !== shown.innerHTML) shown.replaceChildren(...box.childNodes);
  }

  function fillDeskStatus(box) {
    const name = state.route.desk;
    const s = state.desks.get(name);
    const standby = !!s && s.state === "standby";
    $("deskview").classList.toggle("is-standby", standby); // its other parts are the owner's: hidden
    if (!s) { box.append(el("p", { class: "muted" }, "Desk " + name + " is not known to deskd.")); return; }
    if (standby) {
      state.standbyPage = true;
      box.append(el("div", { class: "dv-head" }, el("h1", {}, s.name), stateBadge(s)), standbyNote(s));
      return;
    }
    if (state.standbyPage) { // this host has taken the desk over: its parts are here now
      state.standbyPage = false;
      for (const f of Object.values(DESK_PARTS)) f(name);
    }
    const probs = problems(s);
    box.append(...[
      el("div", { class: "dv-head" },
        el("h1", {}, s.name), stateBadge(s), el("span", { class: "spacer" }),
        killSwitch(s),
        el("button", { type: "button", class: "btn", on: { click: () => rolloverDesk(s.name) } }, "Roll over")),
      pausedInfo(s), ownerInfo(s),
      el("dl", { class: "facts" },
        fact("Turn", turnCell(s)), fact("Model", modelCell(s)), fact("Queue", queueCell(s)),
        fact("Session", el("span", { class: "mono small" }, s.session || "none")), fact("Trading date", s.trading_date || "not available"),
        fact("Next slot", s.next_slot ? (s.next_schedule || "") + " " + fmtTime(s.next_slot) : "none"), fact("Market", marketCell(s)),
        fact("Spend today", s.spend ? (s.spend.day_tokens ?? 0) + " tokens" + (s.spend.day_cost ? " · $" + Number(s.spend.day_cost).toFixed(4) : "") : "not available"),
        fact("Paused triggers", s.paused_triggers || "not available"),
        Array.isArray(s.mcp) && s.mcp.length ? fact("MCP servers", mcpList(s)) : null),
      probs.length ? el("ul", { class: "problems" }, probs.map((p) => el("li", { class: "problem problem-" + p.level }, el("span", { class: "problem-tag" }, p.level === "bad" ? "PROBLEM" : "WARNING"), " ", p.text))) : null,
      interruptedList(s), approvalList(s.name)].filter(Boolean));
  }

  function fact(k, v) { return el("div", { class: "fact" }, el("dt", {}, k), el("dd", {}, v)); }

  function entryView(e) {
    const head = el("div", { class: "entry-head" }, el("span", { class: "entry-kind" }, e.kind), e.at ? el("span", { class: "mono small muted" }, fmtTime(e.at)) : null);
    if (e.kind === "user" && e.trigger) head.append(el("span", { class: "mono small" }, (e.trigger_kind || "") + " " + e.trigger));
    if (e.kind === "assistant") {
      if (e.model) head.append(el("span", { class: "mono small" }, e.model + (e.provider ? " · " + e.provider : "")));
      if (e.scripted) head.append(el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL));
      if (e.usage) head.append(el("span", { class: "small muted" }, (e.usage.input_tokens ?? 0) + " in / " + (e.usage.output_tokens ?? 0) + " out"));
      if (e.duration_ms) head.append(el("span", { class: "small muted" }, (e.duration_ms / 1000).toFixed(1) + " s"));
    }
    if (e.kind === "tool") head.append(el("span", { class: "mono small" }, e.tool_name || ""), e.is_error ? el("span", { class: "badge badge-bad" }, "ERROR") : null);
    if (e.kind === "event" && e.event_kind) head.append(el("span", { class: "mono small" }, e.event_kind));
    const body = el("div", { class: "entry-body" });
    if (e.preamble) body.append(el("details", {}, el("summary", {}, "preamble" + (e.preamble_date ? " · " + e.preamble_date : "")), el("pre", { class: "doc" }, e.preamble)));
    if (e.text) body.append(el("pre", { class: "entry-text" }, e.text));
    else if (e.silent) body.append(el("p", { class: "muted small" }, "(silent reply)"));
    if (e.calls && e.calls.length) body.append(el("ul", { class: "calls" }, e.calls.map((c) => el("li", { class: "mono small" }, c.name + "(" + (typeof c.args === "string" ? c.args : JSON.stringify(c.args)) + ")"))));
    return el("article", { class: "entry entry-" + e.kind }, head, body);
  }

  async function loadTranscript(name) {
    const box = $("dv-transcript");
    const res = await api("GET", deskPath(name, "/sessions/current/transcript"));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); return; }
    const entries = (res.data && res.data.entries) || [];
    clear(box);
    const sess = res.data.session;
    if (sess) box.append(el("p", { class: "small muted" }, "Session ", el("span", { class: "mono" }, sess.id || ""), " · " + (sess.trading_date || "") + " · " + (sess.turns ?? 0) + " turns ", sess.scripted ? el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL) : null));
    if (!entries.length) box.append(el("p", { class: "muted" }, "No entries yet."));
    for (const e of entries) box.append(entryView(e));
  }

  function table(headers, rows) {
    return el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c, i) => el("td", { "data-label": headers[i] }, el("div", { class: "cell" }, c)))))));
  }

  async function loadSessions(name) {
    const box = $("dv-sessions");
    const res = await api("GET", deskPath(name, "/sessions"));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); return; }
    const list = [...((res.data && res.data.sessions) || [])].reverse();
    clear(box);
    if (!list.length) { box.append(el("p", { class: "muted" }, "No sessions.")); return; }
    box.append(table(["Session", "Trading date", "Title", "Turns", "Tokens", "State", "Export"], list.map((s) => [
      el("span", { class: "mono small" }, s.id), s.trading_date || "", el("span", {}, s.title || "", " ", s.scripted ? el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL) : null),
      String(s.turns ?? ""), String(s.tokens ?? ""), s.state || "",
      el("a", { class: "btn btn-small", href: deskPath(name, "/sessions/" + encodeURIComponent(s.id) + "/export"), download: (s.id || "session") + ".html" }, "Export HTML")])));
  }

  function diffView(text) {
    const pre = clear($("dv-diff"));
    for (const line of String(text || "").split("\n")) {
      let cls = "";
      if (line.startsWith("+") && !line.startsWith("+++")) cls = "add";
      else if (line.startsWith("-") && !line.startsWith("---")) cls = "del";
      else if (line.startsWith("@@")) cls = "hunk";
      pre.append(el("span", { class: cls }, line + "\n"));
    }
    if (!text) pre.append(el("span", { class: "muted" }, "(no difference from the current Memory.md)"));
  }

  async function showVersion(name, v) {
    const res = await api("GET", deskPath(name, "/memory/versions/" + encodeURIComponent(v.id)));
    if (!onDesk(name)) return;
    $("dv-diff-box").hidden = false;
    $("dv-diff-h").textContent = "Diff from version " + v.id + " to the current Memory.md";
    if (!res.ok) { clear($("dv-diff")).append(res.error); return; }
    diffView(res.data.diff);
  }

  function restoreVersion(name, v) {
    return ask({
      title: "Restore desk " + name + "'s Memory.md to version " + v.id + "?",
      message: "The current Memory.md is kept as a version of its own, so this can be undone.",
      confirm: "Restore",
      danger: true,
      run: async () => {
        const res = await api("POST", deskPath(name, "/memory/restore"), { version: v.id, by: state.by });
        if (res.ok) { toast("Restored " + res.data.restored + "; the replaced text is kept as " + res.data.kept_as + "."); loadMemory(name); }
        return res;
      },
    });
  }

  async function loadMemory(name) {
    const res = await api("GET", deskPath(name, "/memory"));
    if (!onDesk(name)) return;
    const mem = $("dv-memory");
    const vs = clear($("dv-versions"));
    if (!res.ok) { notAvailable(mem, res); return; }
    mem.textContent = res.data.text || "(Memory.md is empty)";
    const versions = res.data.versions || [];
    if (!versions.length) vs.append(el("li", { class: "muted" }, "No versions."));
    for (const v of versions) {
      vs.append(el("li", { class: "version" },
        el("span", { class: "mono small" }, v.id.slice(0, 16)), " ", el("span", { class: "small muted" }, fmtTime(v.at) + " · " + v.size + " B"),
        el("span", { class: "row" },
          el("button", { type: "button", class: "btn btn-small", on: { click: () => showVersion(name, v) } }, "Diff"),
          el("button", { type: "button", class: "btn btn-small", on: { click: () => restoreVersion(name, v) } }, "Restore"))));
    }
  }

  async function loadNotes(name) {
    const date = $("dv-notes-date").value;
    const res = await api("GET", deskPath(name, "/notes" + (date ? "?date=" + encodeURIComponent(date) : "")));
    if (!onDesk(name)) return;
    const box = $("dv-notes");
    if (!res.ok) { notAvailable(box, res); return; }
    if (!date && res.data.date) $("dv-notes-date").value = res.data.date;
    box.textContent = res.data.text || "(no notes for " + (res.data.date || "this day") + ")";
  }

  async function loadSummaries(name) {
    const box = $("dv-summaries");
    const res = await api("GET", deskPath(name, "/summaries"));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); return; }
    const list = res.data.summaries || [];
    clear(box);
    if (!list.length) box.append(el("p", { class: "muted" }, "No summaries yet."));
    for (const s of list) {
      box.append(el("details", { class: "summary-item" },
        el("summary", {}, (s.date || "") + " · ", el("span", { class: "mono small" }, s.session || ""), " ", s.model ? el("span", { class: "small muted" }, s.model) : null, s.scripted ? el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL) : null),
        el("pre", { class: "doc" }, s.text || "")));
    }
  }

  // A past replay's triggers, both sides, every text as text.
  function replaySide(title, side) {
    if (!side) return el("div", { class: "replay-side" }, el("strong", {}, title), el("p", { class: "muted" }, "Not replayed."));
    return el("div", { class: "replay-side" },
      el("strong", {}, title + " · " + (side.model || "no model")), side.scripted ? el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL) : null,
      el("span", { class: "small muted" }, " cost " + (side.cost || 0).toFixed(4) + ", " + (side.tool_calls || []).length + " tool calls"),
      side.error ? el("p", { class: "small" }, side.error) : null,
      el("pre", { class: "doc replay-reply" }, side.reply || ""),
      ...(side.tool_calls || []).map((c) => el("div", { class: "small mono" }, c.tool + ": " + c.outcome + (c.approval ? " (under approve)" : ""))));
  }

  async function openReplay(name, id, box) {
    const res = await api("GET", deskPath(name, "/replays/" + encodeURIComponent(id)));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); return; }
    clear(box);
    for (const t of res.data.triggers || []) {
      box.append(el("div", { class: "replay-trigger" + (t.differs ? " replay-differs" : "") },
        el("div", { class: "small" }, el("span", { class: "mono" }, t.id), " " + (t.kind || "") + " · " + fmtTime(t.time) + " · " + (t.differs ? "replies differ" : "same reply")),
        replaySide("Original", t.original), replaySide("Candidate", t.candidate)));
    }
  }

  async function loadReplays(name) {
    const box = $("dv-replays");
    const res = await api("GET", deskPath(name, "/replays"));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); return; }
    const list = res.data.replays || [];
    clear(box);
    if (!list.length) box.append(el("p", { class: "muted" }, "No replays yet."));
    for (const r of list) {
      const body = el("div", {});
      const t = r.totals || {};
      const d = el("details", { class: "replay-item" },
        el("summary", {}, (r.trading_date || "") + " · " + (r.candidate && r.candidate.source || "") + " · " + (t.replayed || 0) + "/" + (t.triggers || 0) + " triggers, " +
          (t.differing || 0) + " differ, " + (t.refused || 0) + " refused", r.candidate && r.candidate.scripted ? el("span", { class: "badge badge-scripted" }, SCRIPTED_LABEL) : null,
          r.stopped ? el("span", { class: "small muted" }, " stopped early") : null),
        body);
      d.addEventListener("toggle", () => { if (d.open && !body.childNodes.length) openReplay(name, r.id, body); });
      box.append(d);
    }
  }

  function undoChange(name, c) {
    return ask({
      title: "Undo the curator's change " + c.id + " on desk " + name + "?",
      message: c.action + " " + c.skill + (c.reason ? ": " + c.reason : ""),
      confirm: "Undo change",
      danger: true,
      run: async () => {
        const res = await api("POST", deskPath(name, "/skills/undo"), { change: c.id, by: state.by });
        if (res.ok) { toast("Undone: " + c.action + " " + c.skill + "."); loadSkills(name); }
        return res;
      },
    });
  }

  async function loadSkills(name) {
    const box = $("dv-skills");
    const ch = $("dv-changes");
    const res = await api("GET", deskPath(name, "/skills"));
    if (!onDesk(name)) return;
    if (!res.ok) { notAvailable(box, res); clear(ch); return; }
    const skills = res.data.skills || [];
    const changes = res.data.changes || [];
    clear(box).append(skills.length ? table(["Skill", "Description", "Pinned"], skills.map((s) => [el("span", { class: "mono" }, s.name), s.description || "", s.pinned ? "pinned" : ""])) : el("p", { class: "muted" }, "No skills."));
    clear(ch).append(changes.length ? table(["When", "Action", "Skill", "Reason", ""], changes.map((c) => [fmtTime(c.at), c.action || "", el("span", { class: "mono" }, c.skill || ""), c.reason || "",
      el("button", { type: "button", class: "btn btn-small", on: { click: () => undoChange(name, c) } }, "Undo")])) : el("p", { class: "muted" }, "No changes."));
  }

  function auditLink(name) {
    const date = $("dv-audit-date").value;
    const a = $("dv-audit-link");
    a.href = deskPath(name, "/audit" + (date ? "?date=" + encodeURIComponent(date) : ""));
    a.setAttribute("download", "audit-" + name + (date ? "-" + date : "") + ".tar.gz");
  }

  const DESK_PARTS = { transcript: loadTranscript, sessions: loadSessions, memory: loadMemory, notes: loadNotes, summaries: loadSummaries, replays: loadReplays, skills: loadSkills };

  function openDesk(name) {
    $("dv-name").textContent = name;
    $("dv-diff-box").hidden = true;
    $("dv-trigger-result").textContent = "";
    const s = state.desks.get(name);
    state.standbyPage = !s || s.state === "standby"; // parts load when the desk's status says it runs here
    $("dv-notes-date").value = "";
    $("dv-audit-date").value = s && s.trading_date ? s.trading_date : "";
    auditLink(name);
    renderDeskStatus();
    if (!state.standbyPage) for (const f of Object.values(DESK_PARTS)) f(name);
    fetchDesk(name);
  }

  // ---- routing -----------------------------------------------------------

  function route() {
    const m = location.hash.match(/^#\/desk\/(.+)$/);
    if (m) {
      state.route = { view: "desk", desk: decodeURIComponent(m[1]) };
      $("overview").hidden = true;
      $("deskview").hidden = false;
      document.title = state.route.desk + " · deskd";
      openDesk(state.route.desk);
    } else {
      state.route = { view: "overview", desk: "" };
      $("overview").hidden = false;
      $("deskview").hidden = true;
      document.title = "deskd console";
    }
    window.scrollTo(0, 0);
  }

  // ---- sign-in -----------------------------------------------------------

  function showSignIn() {
    if (state.source) { state.source.close(); state.source = null; }
    setConn("off", "signed out");
    $("main").hidden = true;
    $("signin").hidden = false;
    $("signout").hidden = true;
    $("who").textContent = "";
    $("signin-token").focus();
  }

  // credential asks deskd whether the console has a credential, showing
  // who, and returns {ok, status}: status is the failed call's (0 when
  // deskd could not be reached).
  async function credential() {
    const res = await api("GET", "/v1/whoami");
    if (res.ok) {
      const d = res.data || {};
      $("who").textContent = (d.credential || "operator") + (d.via ? " · via " + d.via : "");
      $("signout").hidden = d.via !== "cookie";
      return { ok: true, status: res.status };
    }
    if (res.status === 401) return { ok: false, status: 401 };
    // No whoami on this deskd: the desks list says whether a credential is needed.
    const probe = await api("GET", "/v1/desks");
    if (probe.ok) { $("who").textContent = "operator"; return { ok: true, status: probe.status }; }
    return { ok: false, status: probe.status };
  }

  // whoami reports whether the console has a credential; it shows who.
  async function whoami() {
    return (await credential()).ok;
  }

  async function start() {
    if (!(await whoami())) { showSignIn(); return; }
    $("signin").hidden = true;
    $("main").hidden = false;
    await loadDesks();
    route();
    connect();
  }

  async function signIn(e) {
    e.preventDefault();
    const err = $("signin-error");
    err.hidden = true;
    const token = $("signin-token").value;
    $("signin-submit").disabled = true;
    const res = await api("POST", "/v1/login", { token });
    $("signin-submit").disabled = false;
    if (!res.ok) {
      err.textContent = res.status === 401 ? "Wrong token: deskd refused it. " + (res.error || "") : "Sign-in failed: " + res.error;
      if (res.status === 404) err.textContent = "This deskd has no console sign-in (POST /v1/login: " + res.error + ").";
      err.hidden = false;
      $("signin-token").value = "";
      $("signin-token").focus();
      return;
    }
    $("signin-token").value = "";
    start();
  }

  async function signOut() {
    await api("POST", "/v1/logout", {});
    showSignIn();
  }

  // ---- wiring ------------------------------------------------------------

  async function sendTrigger(e) {
    e.preventDefault();
    const name = state.route.desk;
    const text = $("dv-trigger-text").value.trim();
    const out = $("dv-trigger-result");
    if (!text) { out.textContent = "Write the trigger's text first."; return; }
    const res = await api("POST", deskPath(name, "/triggers"), { text, kind: "manual" });
    if (!onDesk(name)) return;
    if (!res.ok) { out.textContent = "Refused: " + res.error; out.className = "error-text small"; return; }
    out.className = "muted small";
    out.textContent = "Queued as " + (res.data && res.data.id ? res.data.id : "a trigger") + ".";
    $("dv-trigger-text").value = "";
    refreshDesk(name);
  }

  function init() {
    $("signin-form").addEventListener("submit", signIn);
    $("signout").addEventListener("click", signOut);
    $("sort").addEventListener("change", renderDesks);
    $("filter-desk").addEventListener("change", renderEvents);
    $("filter-topic").addEventListener("input", renderEvents);
    $("events-pause").addEventListener("click", () => {
      state.feedPaused = !state.feedPaused;
      const b = $("events-pause");
      b.textContent = state.feedPaused ? "Resume feed" : "Pause feed";
      b.setAttribute("aria-pressed", String(state.feedPaused));
      renderEvents();
    });
    const dl = $("topics");
    for (const t of TOPICS) dl.append(el("option", { value: t }));
    $("dv-trigger-form").addEventListener("submit", sendTrigger);
    $("dv-transcript-reload").addEventListener("click", () => loadTranscript(state.route.desk));
    $("dv-notes-load").addEventListener("click", () => loadNotes(state.route.desk));
    $("dv-audit-date").addEventListener("change", () => auditLink(state.route.desk));
    window.addEventListener("hashchange", route);
    setInterval(tick, 1000);
    start();
  }

  init();
})();
