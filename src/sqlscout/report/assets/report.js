// sqlscout report: the trajectory viewer. Plain DOM, no libraries; model text is only
// ever set through textContent, never parsed as HTML.
(function () {
  "use strict";
  var errors = document.getElementById("js-errors");
  window.addEventListener("error", function (event) {
    if (errors) errors.textContent += "JavaScript error: " + event.message + "\n";
  });

  var source = document.getElementById("report-data");
  if (!source) return;
  var data = JSON.parse(source.textContent);
  var runs = data.runs;
  var questions = data.questions;
  var PAGE = 200;
  var shown = PAGE;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        if (key === "text") node.textContent = attrs[key];
        else if (key === "class") node.className = attrs[key];
        else node.setAttribute(key, attrs[key]);
      });
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  // -- SQL highlighting ---------------------------------------------------------
  var KEYWORDS = ("select from where join inner left right outer full cross natural on using group by order having " +
    "limit offset union all intersect except distinct as and or not in is null like glob between exists case when " +
    "then else end asc desc with recursive cast collate escape values insert update delete create table view index").split(" ");
  var KW = {};
  KEYWORDS.forEach(function (k) { KW[k] = true; });
  var FUNCS = { count: 1, sum: 1, avg: 1, min: 1, max: 1, abs: 1, round: 1, length: 1, lower: 1, upper: 1,
    substr: 1, strftime: 1, coalesce: 1, ifnull: 1, iif: 1, julianday: 1, date: 1, group_concat: 1, instr: 1, replace: 1, trim: 1 };
  var TOKEN = /('(?:[^']|'')*'?|"(?:[^"]|"")*"?|`[^`]*`?|\b\d+(?:\.\d+)?\b|[A-Za-z_][A-Za-z0-9_]*|\s+|[\s\S])/g;

  function sqlBlock(sql) {
    var code = el("code", { class: "sql" });
    var text = sql || "";
    var match;
    TOKEN.lastIndex = 0;
    while ((match = TOKEN.exec(text)) !== null) {
      var tok = match[0];
      var lower = tok.toLowerCase();
      var cls = null;
      if (tok[0] === "'") cls = "str";
      else if (/^\d/.test(tok)) cls = "num";
      else if (KW[lower]) cls = "kw";
      else if (FUNCS[lower]) cls = "fn";
      code.appendChild(cls ? el("span", { class: cls, text: tok }) : document.createTextNode(tok));
    }
    return code;
  }

  // -- small pieces ---------------------------------------------------------------
  function tag(outcome) {
    return el("span", { class: "tag " + (outcome || "none"), text: outcome || "no verdict" });
  }

  function rowsTable(preview, error) {
    if (!preview) return el("p", { class: "muted", text: error ? "did not run: " + error : "(did not run)" });
    var head = el("tr", null, preview.columns.map(function (c) { return el("th", { text: c }); }));
    var body = preview.rows.map(function (row) {
      return el("tr", null, row.map(function (cell) { return el("td", { text: cell === null ? "NULL" : String(cell) }); }));
    });
    var more = preview.n_rows > preview.rows.length ? " (first " + preview.rows.length + " shown)" : "";
    return el("div", null, [
      el("table", { class: "rows" }, [el("thead", null, [head]), el("tbody", null, body)]),
      el("div", { class: "muted", text: preview.n_rows + " row" + (preview.n_rows === 1 ? "" : "s") + more }),
    ]);
  }

  function modelText(text) {
    var pre = el("pre", { class: "model" });
    var parts = (text || "").split(/(<think>[\s\S]*?(?:<\/think>|$))/);
    parts.forEach(function (part) {
      if (!part) return;
      pre.appendChild(part.indexOf("<think>") === 0 ? el("span", { class: "think", text: part }) : document.createTextNode(part));
    });
    return pre;
  }

  function callView(call) {
    var args = call.args || {};
    var parts = [el("div", null, [el("span", { class: "name", text: call.tool }), " ",
      el("span", { class: "muted", text: call.ok ? "" : "(error)" })])];
    Object.keys(args).forEach(function (key) {
      if (key === "sql" || key === "query") parts.push(sqlBlock(String(args[key])));
      else parts.push(el("div", { class: "muted", text: key + " = " + JSON.stringify(args[key]) }));
    });
    parts.push(el("pre", { class: "out", text: call.out }));
    return el("div", { class: "call" + (call.ok ? "" : " err") }, parts);
  }

  function roundView(round, open) {
    var title = round.final ? "Final turn" : "Round " + round.i;
    var calls = round.calls.length ? " · " + round.calls.map(function (c) { return c.tool; }).join(", ") : "";
    var details = el("details", { class: "round" + (round.final ? " final" : "") }, [
      el("summary", { text: title + calls }),
      modelText(round.text),
    ]);
    round.calls.forEach(function (call) { details.appendChild(callView(call)); });
    round.errors.forEach(function (e) { details.appendChild(el("div", { class: "muted", text: "parse error: " + e })); });
    if (open) details.open = true;
    return details;
  }

  function episodeView(ep) {
    var pane = el("div", { class: "episode" });
    pane.appendChild(el("p", null, [tag(ep.outcome), " ", el("span", { class: "muted",
      text: "ended: " + ep.stop + " · answer from: " + ep.source + " · " + ep.rounds.length + (ep.rounds.length === 1 ? " round · " : " rounds · ") +
        ep.tokens[1] + " generated tokens · " + ep.wall.toFixed(2) + " s" })]));
    if (ep.error) pane.appendChild(el("p", { class: "muted", text: "backend error: " + ep.error }));
    pane.appendChild(el("div", { class: "muted", text: "Final SQL" }));
    pane.appendChild(ep.final_sql ? sqlBlock(ep.final_sql) : el("p", { class: "muted", text: "(no answer)" }));
    pane.appendChild(rowsTable(ep.pred, ep.pred_error));
    var rounds = el("div", { class: "rounds" });
    var next = 0;
    var step = el("button", { type: "button", class: "next-round", text: "next round" });
    var all = el("button", { type: "button", class: "all-rounds", text: "all rounds" });
    function unfold(count) {
      while (next < ep.rounds.length && count-- > 0) {
        rounds.appendChild(roundView(ep.rounds[next], true));
        next += 1;
      }
      step.disabled = all.disabled = next >= ep.rounds.length;
    }
    step.addEventListener("click", function () { unfold(1); });
    all.addEventListener("click", function () { unfold(ep.rounds.length); });
    if (ep.user) {
      pane.appendChild(el("details", { class: "prompt" }, [el("summary", { text: "prompt (user turn)" }), el("pre", { text: ep.user })]));
    }
    pane.appendChild(el("div", null, [step, " ", all]));
    pane.appendChild(rounds);
    unfold(1);
    return pane;
  }

  function runPane(q, r) {
    var eps = q.episodes[r] || [];
    var pane = el("div", { class: "pane run-pane", "data-run": String(r) }, [el("h3", { text: runs[r].name })]);
    if (!eps.length) {
      pane.appendChild(el("p", { class: "muted", text: "not in this run" }));
      return pane;
    }
    var holder = el("div");
    var buttons = el("div", { class: "samples" });
    eps.forEach(function (ep, n) {
      var button = el("button", { type: "button" }, [el("span", { class: "badge " + (ep.outcome || "none") }), "sample " + ep.sample]);
      button.addEventListener("click", function () {
        Array.prototype.forEach.call(buttons.children, function (b) { b.classList.remove("active"); });
        button.classList.add("active");
        holder.textContent = "";
        holder.appendChild(episodeView(ep));
      });
      buttons.appendChild(button);
      if (n === 0) button.classList.add("active");
    });
    if (eps.length > 1) pane.appendChild(buttons);
    holder.appendChild(episodeView(eps[0]));
    pane.appendChild(holder);
    return pane;
  }

  function showQuestion(index) {
    var q = questions[index];
    var detail = document.getElementById("episode-detail");
    detail.textContent = "";
    var head = [el("h3", { text: "Q " + q.key + (q.db_id ? " · " + q.db_id : "") + (q.difficulty ? " · " + q.difficulty : "") }),
      el("p", { class: "question", text: q.question })];
    if (q.evidence) head.push(el("p", { class: "muted", text: "Evidence: " + q.evidence }));
    var gold = el("div", { class: "pane gold-pane" }, [el("h3", { text: "Gold" }),
      q.gold_sql ? sqlBlock(q.gold_sql) : el("p", { class: "muted", text: "(no gold query)" }), rowsTable(q.gold)]);
    var panes = [gold];
    for (var r = 0; r < runs.length; r++) panes.push(runPane(q, r));
    detail.appendChild(el("div", { class: "pane" }, head));
    detail.appendChild(el("div", { class: "detail-grid" }, panes));
    Array.prototype.forEach.call(document.querySelectorAll("#episode-list tbody tr"), function (tr) {
      tr.classList.toggle("selected", tr.getAttribute("data-q") === String(index));
    });
    detail.scrollIntoView({ block: "nearest" });
  }

  // -- the list ---------------------------------------------------------------------
  var search = document.getElementById("filter-text");
  var outcomeFilter = document.getElementById("filter-outcome");
  var difficultyFilter = document.getElementById("filter-difficulty");
  var counter = document.getElementById("episode-count");
  var more = document.getElementById("show-more");

  function matches(q) {
    var text = search.value.trim().toLowerCase();
    if (text && (q.question + " " + q.key + " " + (q.gold_sql || "") + " " + (q.db_id || "")).toLowerCase().indexOf(text) < 0) return false;
    if (difficultyFilter.value && q.difficulty !== difficultyFilter.value) return false;
    var want = outcomeFilter.value;
    if (!want) return true;
    return q.episodes.some(function (eps) { return eps.some(function (ep) { return (ep.outcome || "none") === want; }); });
  }

  function renderList() {
    var body = document.querySelector("#episode-list tbody");
    body.textContent = "";
    var hits = 0;
    questions.forEach(function (q, index) {
      if (!matches(q)) return;
      hits += 1;
      if (hits > shown) return;
      var cells = [el("td", { text: q.key }), el("td", { text: q.question }), el("td", { text: q.difficulty || "" })];
      runs.forEach(function (run, r) {
        cells.push(el("td", null, (q.episodes[r] || []).map(function (ep) {
          return el("span", { class: "badge " + (ep.outcome || "none"), title: run.name + " sample " + ep.sample + ": " + (ep.outcome || "no verdict") });
        })));
      });
      var tr = el("tr", { "data-q": String(index) }, cells);
      tr.addEventListener("click", function () { showQuestion(index); });
      body.appendChild(tr);
    });
    counter.textContent = hits + " question" + (hits === 1 ? "" : "s") + (hits > shown ? " (first " + shown + " listed)" : "");
    more.hidden = hits <= shown;
  }

  [search, outcomeFilter, difficultyFilter].forEach(function (input) {
    input.addEventListener("input", function () { shown = PAGE; renderList(); });
  });
  more.addEventListener("click", function () { shown += PAGE; renderList(); });
  renderList();
  var wanted = /#q=(\d+)/.exec(window.location.hash);
  if (wanted && questions[+wanted[1]]) showQuestion(+wanted[1]);
})();
