// eog-core report: tables a page at a time, filters, search, deep links, transcripts.
// Data reaches the page only through textContent: model text is never parsed as HTML.
(function () {
  "use strict";
  var PAGE = 100;
  function data(id) { return JSON.parse(document.getElementById(id).textContent); }
  var meta = data("eog-meta"), rows = data("eog-rows"), tasks = data("eog-tasks");
  // The transcripts are in blocks (meta.details: [first, count, bytes] each), each parsed when
  // first needed; a block the browser cannot read (too long a string) is said so, not hidden.
  var blocks = meta.details || [], parsed = [], unreadable = [], haystack = null;
  function blockOf(i) {
    for (var b = 0; b < blocks.length; b++) if (i >= blocks[b][0] && i < blocks[b][0] + blocks[b][1]) return b;
    return -1;
  }
  function detail(i) {  // {d: the transcript or null, problem: why it cannot be read}
    var b = blockOf(i);
    if (b < 0) return { d: null };
    if (parsed[b] === undefined && unreadable[b] === undefined) {
      try { parsed[b] = data("eog-details-" + b); } catch (e) { unreadable[b] = String((e && e.message) || e); }
    }
    if (unreadable[b] !== undefined) {
      return { d: null, problem: "its block of the page (" + (b + 1) + " of " + blocks.length + ", " +
        (blocks[b][2] / 1048576).toFixed(1) + " MB) could not be read by this browser: " + unreadable[b] };
    }
    return { d: parsed[b][i - blocks[b][0]] };
  }
  function unreadableRows() {
    var n = 0;
    unreadable.forEach(function (_, b) { n += blocks[b][1]; });
    return n;
  }
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "cls") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return node;
  }
  function pct(v) { return v === null || v === undefined ? "-" : (v * 100).toFixed(2) + "%"; }
  function num(v, digits) { return v === null || v === undefined ? "-" : Number(v).toFixed(digits || 0); }
  function money(v) { return v === null || v === undefined ? "-" : Number(v).toFixed(4); }
  function outcome(v) { return v === true ? "pass" : v === false ? "fail" : "incomplete"; }
  function badge(v) { var o = outcome(v); return el("span", { cls: "badge " + o, text: o }); }
  // A rollout's damage verdict (meta.damage: some record has one): a strict success that
  // damages is shown as damage ("success + damage"), never as a clean pass.
  function damageState(r) {
    if (r.damage === undefined || r.damage === null) return "none";
    if (r.damage === "FAIL_DAMAGE") return r.strict === true ? "success_damage" : "damage";
    return r.damage;
  }
  var DAMAGE_BADGES = { success_damage: ["success + damage", "fail"], damage: ["damage", "fail"], PASS: ["PASS", "pass"],
    FAIL_SAFE: ["FAIL_SAFE", "uncounted"], unjudged: ["unjudged", "uncounted"], none: ["-", "uncounted"] };
  function damageBadge(r) {
    var state = damageState(r), b = DAMAGE_BADGES[state] || [String(r.damage), "uncounted"];
    return el("span", { cls: "badge damage " + b[1], "data-damage": state, text: b[0] });
  }
  // <trust>
  // Each task's certificate (meta.trust, from --certificates): a badge in the task table and
  // the transcripts; a task without a certificate is unchecked.
  var TRUST_BADGES = { certified: "pass", clean: "uncounted", flagged: "fail", unchecked: "incomplete" };
  function trustOf(taskId) {
    return (meta.trust && meta.trust[taskId]) || { status: "unchecked", kinds: [], stale: false, label: "unchecked" };
  }
  function trustBadge(taskId) {
    var t = trustOf(taskId);
    return el("span", { cls: "badge trust " + (TRUST_BADGES[t.status] || "incomplete"), "data-trust": t.status, title: t.label, text: t.label });
  }
  // </trust>
  function label(run) { return meta.runs[run] ? meta.runs[run].label : String(run); }
  function runIndex(value) {  // a run's name (as deep links give it), or its index
    for (var i = 0; i < meta.runs.length; i++) if (meta.runs[i].name === value) return String(i);
    return value;
  }
  function decode(text) {  // a malformed escape (#%, #rollout=%E0%A4%A) is read as it is
    try { return decodeURIComponent(text); } catch (e) { return text; }
  }
  function runCell(run) {
    return el("td", { cls: "run" }, [el("span", { cls: "swatch", style: "background:" + meta.runs[run].colour }), label(run)]);
  }

  // ---- tabs and deep links ----
  function show(tab) {
    document.querySelectorAll("section.tab").forEach(function (s) { s.classList.toggle("active", s.id === "tab-" + tab); });
    document.querySelectorAll("#tabs a").forEach(function (a) { a.classList.toggle("active", a.dataset.tab === tab); });
  }
  function route() {
    var hash = location.hash.slice(1);
    if (hash.indexOf("rollout=") === 0) { show("rollouts"); openRollout(decode(hash.slice(8))); return; }
    var cut = hash.indexOf("?"), tab = decode(cut < 0 ? hash : hash.slice(0, cut)) || "overview";
    if (!/^[a-z]+$/.test(tab) || !document.getElementById("tab-" + tab)) tab = "overview";
    if (cut >= 0) {
      var box = document.getElementById(tab === "tasks" ? "task-filters" : "rollout-filters");
      new URLSearchParams(hash.slice(cut + 1)).forEach(function (value, key) {
        var input = box && box.querySelector('[data-filter="' + CSS.escape(key) + '"]');
        if (input) input.value = key === "run" ? runIndex(value) : value;
      });
    }
    show(tab);
    if (tab === "rollouts") { closeTranscript(); rolloutView.update(); }
    if (tab === "tasks") taskView.update();
  }

  // ---- paged, filtered tables ----
  function options(box, key, values) {
    var select = box.querySelector('[data-filter="' + key + '"]');
    if (!select) return;
    values.filter(function (v, i, a) { return v !== null && v !== undefined && a.indexOf(v) === i; }).sort()
      .forEach(function (v) { select.appendChild(el("option", { value: v, text: v })); });
  }
  function table(boxId, tableId, pagerId, items, matches, cells, onRow, onUpdate) {
    var box = document.getElementById(boxId), body = document.querySelector("#" + tableId + " tbody");
    var pager = document.getElementById(pagerId), page = 0, shown = items;
    function filters() {
      var f = {};
      box.querySelectorAll("[data-filter]").forEach(function (i) { f[i.dataset.filter] = i.value.trim(); });
      return f;
    }
    function draw() {
      var start = page * PAGE, frag = document.createDocumentFragment();
      shown.slice(start, start + PAGE).forEach(function (item) {
        var tr = el("tr", { "data-id": item.id || "" }, cells(item));
        if (onRow) { tr.classList.add("link"); tr.addEventListener("click", function () { onRow(item); }); }
        frag.appendChild(tr);
      });
      body.replaceChildren(frag);
      var pages = Math.max(1, Math.ceil(shown.length / PAGE));
      var prev = el("button", { type: "button", text: "‹ prev" }), next = el("button", { type: "button", text: "next ›" });
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
      prev.addEventListener("click", function () { page--; draw(); });
      next.addEventListener("click", function () { page++; draw(); });
      pager.replaceChildren(prev, el("span", { text: " page " + (page + 1) + " of " + pages + " · " + shown.length + " of " + items.length + " " }), next);
    }
    var applied = null;
    function update() {
      // unchanged filters keep the table as it is: the "change" of a search box on its blur
      // would otherwise redraw the rows between the mousedown and mouseup of a click on one
      var f = filters(), key = JSON.stringify(f);
      if (key === applied) return shown;
      applied = key;
      shown = items.filter(function (item, i) { return matches(item, f, i); });
      page = 0; draw();
      if (onUpdate) onUpdate(shown);
      return shown;
    }
    var timer = null;
    box.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(update, 120); });
    box.addEventListener("change", update);
    return { update: update };
  }

  function textOf(i) {
    if (haystack === null) haystack = [];
    if (haystack[i] === undefined) {
      var d = detail(i).d;
      haystack[i] = d ? JSON.stringify(d).toLowerCase() : "";
    }
    return haystack[i];
  }
  rows.forEach(function (r, i) { r.index = i; });
  var rolloutBox = document.getElementById("rollout-filters");
  ["domain", "failure_kind", "stop_reason"].forEach(function (k) { options(rolloutBox, k, rows.map(function (r) { return r[k]; })); });
  var rolloutView = table("rollout-filters", "rollout-table", "rollout-pager", rows, function (r, f) {
    if (f.run !== "" && String(r.run) !== f.run) return false;
    if (f.domain && r.domain !== f.domain) return false;
    if (f.outcome && outcome(r[f.policy || "strict"]) !== f.outcome) return false;
    if (f.damage) {
      var state = damageState(r);
      if (f.damage === "damage" ? state !== "damage" && state !== "success_damage" : state !== f.damage) return false;
    }
    if (f.failure_kind && r.failure_kind !== f.failure_kind) return false;
    if (f.stop_reason && r.stop_reason !== f.stop_reason) return false;
    if (f.q) {
      var q = f.q.toLowerCase();
      if (r.task_id.toLowerCase().indexOf(q) < 0 && textOf(r.index).indexOf(q) < 0) return false;
    }
    return true;
  }, function (r) {
    return [runCell(r.run), el("td", { text: r.domain }), el("td", { cls: "tid", text: r.task_id }), el("td", { text: String(r.repeat) }),
      el("td", { "data-outcome": outcome(r.strict) }, [badge(r.strict)]), el("td", { "data-outcome": outcome(r.parity) }, [badge(r.parity)]),
      meta.damage ? el("td", { "data-damage": damageState(r) }, [damageBadge(r)]) : null,
      el("td", { text: r.failure_kind || "" }), el("td", { text: r.stop_reason || "" }), el("td", { text: num(r.turns) }),
      el("td", { text: num(r.calls) }), el("td", { text: num(r.tokens) }), el("td", { text: money(r.cost) }),
      el("td", { text: r.duration_ms === undefined ? "-" : (r.duration_ms / 1000).toFixed(2) + " s" })];
  }, function (r) { location.hash = "rollout=" + encodeURIComponent(r.id); }, function (shown) {
    var count = shown.length + " of " + rows.length + " rollouts", missed = unreadableRows();
    if (missed && rolloutBox.querySelector('[data-filter="q"]').value.trim()) {
      count += " · the search could not read " + missed + " transcripts: the page is too big for this browser";
    }
    document.getElementById("rollout-count").textContent = count;
  });

  var taskBox = document.getElementById("task-filters");
  options(taskBox, "domain", tasks.map(function (t) { return t.domain; }));
  function band(t) {
    var s = t.strict || t.parity;
    if (!s || s.rate === null) return "unscored";
    return s.rate === 0 ? "never" : s.rate === 1 ? "always" : "mixed";
  }
  var taskView = table("task-filters", "task-table", "task-pager", tasks, function (t, f) {
    if (f.run !== "" && String(t.run) !== f.run) return false;
    if (f.domain && t.domain !== f.domain) return false;
    if (f.band && band(t) !== f.band) return false;
    if (f.trust && trustOf(t.task_id).status !== f.trust) return false;  // trust
    return !f.q || t.task_id.toLowerCase().indexOf(f.q.toLowerCase()) >= 0;
  }, function (t) {
    var s = t.strict || {}, p = t.parity || {};
    var dots = el("td", { cls: "dots" }, (s.outcomes || []).map(function (o) { return el("span", { cls: "dot " + outcome(o), title: outcome(o) }); }));
    if (meta.trust) return [runCell(t.run), el("td", { text: t.domain }), el("td", { cls: "tid", text: t.task_id }), el("td", { "data-trust": trustOf(t.task_id).status }, [trustBadge(t.task_id)]), dots,  // trust
      el("td", { text: pct(s.rate) }), el("td", { text: pct(p.rate) }), el("td", { text: pct(s.flip) }),  // trust
      el("td", { text: num(t.turns, 1) }), el("td", { text: num(t.calls, 1) }), el("td", { text: num(t.tokens) }), el("td", { text: money(t.cost) })];  // trust
    return [runCell(t.run), el("td", { text: t.domain }), el("td", { cls: "tid", text: t.task_id }), dots,
      el("td", { text: pct(s.rate) }), el("td", { text: pct(p.rate) }), el("td", { text: pct(s.flip) }),
      el("td", { text: num(t.turns, 1) }), el("td", { text: num(t.calls, 1) }), el("td", { text: num(t.tokens) }), el("td", { text: money(t.cost) })];
  }, function (t) {
    show("rollouts");
    rolloutBox.querySelector('[data-filter="q"]').value = t.task_id;
    rolloutBox.querySelector('[data-filter="run"]').value = String(t.run);
    location.hash = "rollouts";
  });

  // ---- the transcript ----
  function pretty(text) {
    if (typeof text !== "string") return "";
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }
  function block(title, text, open) {
    if (text === null || text === undefined || text === "") return null;
    var d = el("details", open ? { open: "" } : null, [el("summary", { text: title }), el("pre", { text: text })]);
    return d;
  }
  function subtaskTable(d) {  // decomposing: the planner's subtasks, each sub-agent's result
    var head = el("tr", null, ["#", "Subtask", "Depends on", "Result", "Summary", "Kept in memory"].map(function (h) { return el("th", { text: h }); }));
    var body = d.subtasks.map(function (s) {
      var res = !s.ran ? "not run" : s.success ? "done" : "failed";
      return el("tr", { cls: s.ran && s.success ? "pass" : "fail" }, [el("td", { text: show_value(s.id) }), el("td", { text: show_value(s.title) }),
        el("td", { text: show_value(s.dependencies) }), el("td", { text: res + (s.stop_reason ? " · " + s.stop_reason : "") }),
        el("td", null, [el("pre", { text: s.error ? "Error: " + show_value(s.error) : show_value(s.summary) })]),
        el("td", null, [show_value(s.memory), s.memory_error ? el("div", { cls: "sub", text: "memory answer: " + s.memory_error }) : null])]);
    });
    return el("div", null, [el("h4", { text: "Decomposition" }), body.length ? el("table", { cls: "grid subtasks" }, [el("thead", null, [head]), el("tbody", null, body)]) : el("p", { cls: "sub", text: "No subtask: the planner's answers held no decomposition." }),
      d.working_memory === null || d.working_memory === undefined ? null : block("Working memory at the end", show_value(d.working_memory), false),
      d.decomposition_errors && d.decomposition_errors.length ? block("Why the planner's answers held no decomposition", d.decomposition_errors.join("\n"), true) : null]);
  }
  function show_value(v) { return v === null || v === undefined ? "∅" : typeof v === "string" ? v : JSON.stringify(v); }
  function verdictTable(policy, results, rate) {
    if (!results || !results.length) return el("p", { cls: "sub", text: policy + ": no verifier results recorded" });
    var head = el("tr", null, ["#", "Verifier", "Query", "Expected", "Actual", "Comparison", "Counted", "Result"].map(function (h) { return el("th", { text: h }); }));
    var body = results.map(function (v, i) {
      var res = v.counted === false ? "not counted" : v.error ? "error" : v.passed ? "pass" : "fail";
      return el("tr", { cls: res === "not counted" ? "uncounted" : res }, [el("td", { text: String(i + 1) }), el("td", { text: v.name || "" }),
        el("td", null, [el("code", { text: v.query || v.details || "" })]), el("td", { text: show_value(v.expected) }),
        el("td", { text: show_value(v.actual) }), el("td", { text: v.comparison_type || v.kind || "" }),
        el("td", { text: v.counted === false ? "no" : "yes" }),
        el("td", null, [el("span", { cls: "badge " + (res === "pass" ? "pass" : res === "fail" ? "fail" : res === "error" ? "incomplete" : "uncounted"), text: res }),
          res === "not counted" ? el("div", { cls: "sub", text: "checked: " + (v.error ? "error" : v.passed ? "pass" : "fail") }) : null,
          v.error ? el("div", { cls: "sub", text: v.error }) : null])]);
    });
    return el("div", null, [el("h4", { text: policy + " verdict" + (rate === null || rate === undefined ? "" : " · verifier pass rate " + pct(rate)) }),
      el("table", { cls: "grid verdicts", "data-policy": policy }, [el("thead", null, [head]), el("tbody", null, body)])]);
  }
  function diffChange(d) {  // a delta's change as text: changed columns before -> after, or the row
    if (d.op === "modified" && Array.isArray(d.columns) && d.before && typeof d.before === "object" && d.after && typeof d.after === "object") {
      return d.columns.map(function (c) { return c + ": " + show_value(d.before[c]) + " → " + show_value(d.after[c]); }).join("\n");
    }
    if (d.op === "modified") return "before " + show_value(d.before) + "\nafter " + show_value(d.after);
    return (d.op === "removed" ? "− " + show_value(d.before) : "+ " + show_value(d.after));
  }
  function diffTable(damage, row) {
    var price = (damage.severity ? " · severity " + damage.severity : "") + (damage.dollars !== null ? " · $" + damage.dollars.toFixed(2) : "");
    var parts = [el("h4", { text: "State diff · " + (damage.outcome || "?") + price })];
    if (damageState(row) === "success_damage") {
      parts.push(el("p", { cls: "failure", text: "Strict success while damaging: counted as damage (FAIL_DAMAGE), not as a pass." }));
    }
    if (!damage.deltas.length) { parts.push(el("p", { cls: "sub", text: "No row changed." })); return el("div", { cls: "diff" }, parts); }
    var head = el("tr", null, ["Gym", "Table", "Op", "Key", "Change", "Verdict", "Severity", "Dollars"].map(function (h) { return el("th", { text: h }); }));
    var body = damage.deltas.map(function (d) {
      var verdict = d.verdict || "?", cls = verdict === "damage" ? "fail" : verdict === "allowed" ? "pass" : "uncounted";
      var damaged = Array.isArray(d.damaged_columns) && d.damaged_columns.length ? el("div", { cls: "sub", text: "damaged: " + d.damaged_columns.join(", ") }) : null;
      return el("tr", { cls: "delta " + verdict, "data-verdict": verdict }, [el("td", { text: d.gym || "" }), el("td", { cls: "tid", text: d.table || "" }),
        el("td", { text: d.op || "" }), el("td", { cls: "tid", text: d.key === null || d.key === undefined ? "(no key)" : show_value(d.key) }),
        el("td", null, [el("pre", { text: diffChange(d) })]), el("td", null, [el("span", { cls: "badge " + cls, text: verdict }), damaged]),
        el("td", { text: d.severity || "" }), el("td", { text: d.dollars === null || d.dollars === undefined ? "" : d.dollars.toFixed(2) })]);
    });
    parts.push(el("table", { cls: "grid diff" }, [el("thead", null, [head]), el("tbody", null, body)]));
    if (damage.more) parts.push(el("p", { cls: "sub", text: damage.more + " more changed row(s) in rollouts.jsonl." }));
    return el("div", { cls: "diff" }, parts);
  }
  function closeTranscript() { var t = document.getElementById("transcript"); t.hidden = true; t.replaceChildren(); }
  function findRow(id) {
    var row = rows.find(function (r) { return r.id === id; });
    var slash = id.indexOf("/"), first = id.slice(0, slash);
    if (!row && slash > 0 && /^[0-9]+$/.test(first) && meta.runs[Number(first)]) {  // an older page's link: the run's index
      var named = meta.runs[Number(first)].name + id.slice(slash);
      row = rows.find(function (r) { return r.id === named; });
    }
    return row;
  }
  function openRollout(id) {
    rolloutView.update();
    var row = findRow(id), box = document.getElementById("transcript");
    if (!row) { box.hidden = false; box.replaceChildren(el("p", { text: "No rollout " + id + " in this report." })); return; }
    var found = detail(row.index), d = found.d;
    var close = el("button", { type: "button", cls: "close", text: "× close" });
    close.addEventListener("click", function () { location.hash = "rollouts"; });
    var parts = [close, el("h2", { text: row.task_id + " · repeat " + row.repeat }),
      el("p", { cls: "sub" }, [label(row.run) + " · " + row.domain + " · " + row.mode + " · strict ", badge(row.strict), " parity ", badge(row.parity),
        meta.damage && row.damage !== undefined ? " damage " : "", meta.damage && row.damage !== undefined ? damageBadge(row) : "",
        row.stop_reason ? " · stop: " + row.stop_reason : "", row.failure_kind ? " · failure: " + row.failure_kind : "",
        " · ", el("a", { href: "#rollout=" + encodeURIComponent(row.id), text: "link to this rollout" })])];
    if (meta.trust) parts.push(el("p", { cls: "sub trust" }, ["certificate of the task: ", trustBadge(row.task_id)]));  // trust
    if (found.problem) {
      parts.push(el("p", { cls: "failure", text: "This transcript cannot be shown: " + found.problem + ". Its record is in the run's rollouts.jsonl." }));
    } else if (!d) {
      parts.push(el("p", { text: "No transcript was recorded for this rollout." }));
    } else {
      if (d.failure_reason) parts.push(el("p", { cls: "failure", text: "Incomplete: " + d.failure_reason }));
      parts.push(block("System prompt", d.system_prompt, false), block("User prompt", d.user_prompt, true));
      if (!d.system_prompt && !d.user_prompt) parts.push(el("p", { cls: "sub", text: "Prompts: pass --tasks to show the task's system and user prompt." }));
      if (d.orchestrator) parts.push(el("p", { cls: "sub", text: "Orchestrator: " + d.orchestrator }), block("Plan (the planner's answer)", d.plan === null ? "∅" : d.plan || "∅ (empty)", true),
        block("The executor's user message (the task with the plan)", d.executor_user_prompt, false));
      if (d.subtasks) parts.push(subtaskTable(d));  // decomposing
      var shownRole = null;
      d.turns.forEach(function (t) {
        if (d.subtasks && t.role !== shownRole) {  // decomposing: a heading per planner / sub-agent
          shownRole = t.role;
          var n = /^sub-agent (\d+)$/.exec(t.role || ""), sub = n ? d.subtasks[Number(n[1]) - 1] : null;
          parts.push(el("h4", { cls: "role", text: (t.role || "?") + (sub ? ": " + show_value(sub.title) : "") }));
        }
        var info = "Turn " + t.turn + (t.role ? " · " + t.role : "") + (t.memory_extraction ? " · memory question" : "") + " · model " + num(t.model_latency_ms) + " ms" + (t.finish_reason ? " · " + t.finish_reason : "") +
          (t.usage ? " · " + (t.usage.input_tokens || 0) + " in / " + (t.usage.output_tokens || 0) + " out tokens" : "");
        var calls = t.tool_calls.map(function (c) {
          var state = c.is_error ? (c.gym ? "error" : "refused") : "ok";
          return el("div", { cls: "call " + state }, [
            el("div", { cls: "callhead" }, [el("b", { text: c.name || "?" }), " ", el("span", { cls: "badge " + (state === "ok" ? "pass" : "fail"), text: state }),
              " " + num(c.latency_ms) + " ms" + (c.gym ? " · " + c.gym : "")]),
            el("pre", { cls: "args", text: pretty(c.arguments) }), block("Observation", pretty(c.observation), false)]);
        });
        parts.push(el("div", { cls: "turn" }, [el("div", { cls: "turnhead", text: info }), block("Reasoning", t.reasoning, false),
          t.text ? el("pre", { cls: "text", text: t.text }) : null].concat(calls)));
      });
      parts.push(el("h4", { text: "Final answer" }), el("pre", { cls: "text final", text: d.final_answer || "∅" }));
      parts.push(verdictTable("strict", d.verdicts.strict, d.pass_rate.strict), verdictTable("parity", d.verdicts.parity, d.pass_rate.parity));
      if (d.damage) parts.push(diffTable(d.damage, row));
    }
    document.querySelectorAll("#rollout-table tbody tr").forEach(function (tr) { tr.classList.toggle("selected", tr.dataset.id === row.id); });
    box.replaceChildren.apply(box, parts.filter(function (p) { return p; }));
    box.hidden = false;
    box.scrollIntoView();
  }

  var download = document.getElementById("bands-download");
  if (download) download.addEventListener("click", function () {
    var blob = new Blob([document.getElementById("eog-bands").textContent], { type: "application/json" });
    var a = el("a", { href: URL.createObjectURL(blob), download: "task-bands.json" });
    document.body.appendChild(a); a.click(); a.remove();
  });
  document.querySelectorAll("#tabs a").forEach(function (a) {
    a.addEventListener("click", function () { if (location.hash === "#" + a.dataset.tab) route(); });
  });
  window.addEventListener("hashchange", route);
  route();
}());
