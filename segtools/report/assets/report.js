/* segtools report: draws the tables and charts from the embedded JSON document.
 *
 * Every string in the document may come from a hostile log dir (topic names, keys, values,
 * header keys, group ids). This script never builds markup from data: every element is made
 * with createElement and every string goes in through textContent (el() below), so a string
 * is always shown as text. Nothing is fetched; the page's policy forbids it anyway. */
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("report-data").textContent);
  var PAGE = 50;
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                "#17becf", "#7f7f7f", "#bcbd22"];

  // ------------------------------------------------------------------ helpers

  var visible = SegtoolsFormat.visible, fmtBytes = SegtoolsFormat.fmtBytes,
      fmtTime = SegtoolsFormat.fmtTime;

  function el(tag, cls, children) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (children === undefined || children === null) return e;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "object" ? c : document.createTextNode(visible(c)));
    });
    return e;
  }

  /* Text that may wrap only after one of ``after`` (a path after "/", so a segment's 20-digit
   * file name stays on one line; a finding code after "_"), never inside a word. */
  function breakAfter(tag, text, after) {
    var e = el(tag);
    String(text).split(new RegExp("(?<=[" + after + "])")).forEach(function (part, i) {
      if (i) e.appendChild(el("wbr"));
      e.appendChild(document.createTextNode(visible(part)));
    });
    return e;
  }

  function pathEl(text) { return breakAfter("code", text, "/"); }

  /* A name from the tree (a topic): kept whole, unless it is too long to be a name a person
   * reads whole (a hostile one of escapes): then it is data, and may wrap anywhere. */
  function nameCell(text, cls) {
    var td = el("td", cls, text);
    td.classList.add(visible(text).length > 32 && !/\s/.test(text) ? "data" : "nowrap");
    return td;
  }

  function fmtDur(ms) {
    if (ms === null || ms === undefined) return "-";
    var s = Math.abs(ms) / 1000, sign = ms < 0 ? "-" : "";
    if (s < 120) return sign + s.toFixed(1) + "s";
    if (s < 7200) return sign + (s / 60).toFixed(1) + "m";
    if (s < 172800) return sign + (s / 3600).toFixed(1) + "h";
    return sign + (s / 86400).toFixed(1) + "d";
  }

  function show(v) { return v === null || v === undefined ? "-" : v; }

  function table(headers, rows, cls) {
    var t = el("table", "grid" + (cls ? " " + cls : ""));
    var tr = el("tr");
    headers.forEach(function (h) { tr.appendChild(el("th", null, h)); });
    t.appendChild(el("thead", null, tr));
    var body = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) {
        row.appendChild(c instanceof Node && c.nodeName === "TD" ? c : el("td", null, c));
      });
      body.appendChild(row);
    });
    t.appendChild(body);
    return t;
  }

  function num(v) { return el("td", "num", show(v)); }

  function kv(pairs) {
    var dl = el("dl", "kv");
    pairs.forEach(function (p) {
      if (p[1] === undefined) return;
      dl.appendChild(el("dt", null, p[0]));
      dl.appendChild(el("dd", null, p[1] === null ? "-" : p[1]));
    });
    return dl;
  }

  function sevCell(s) { return el("td", "nowrap sev-" + s, s); }

  /* A time that may wrap between its date and its time of day, nowhere else. */
  function timeCell(ms) { return el("td", null, breakAfter("span", fmtTime(ms), "T")); }

  function counts(p) {
    var parts = [];
    if (p.errors) parts.push(p.errors + " error" + (p.errors > 1 ? "s" : ""));
    if (p.warnings) parts.push(p.warnings + " warning" + (p.warnings > 1 ? "s" : ""));
    if (p.infos) parts.push(p.infos + " note" + (p.infos > 1 ? "s" : ""));
    return parts.join(" · ") || "-";
  }

  function compare(key, dir) {
    return function (a, b) {
      var x = a[key], y = b[key];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    };
  }

  // ------------------------------------------------------------------ charts

  function tooltip(container) {
    var tip = el("div", "tip");
    container.appendChild(tip);
    return tip;
  }

  function placeTip(u, tip, lines) {
    if (u.cursor.idx === null || u.cursor.idx === undefined || u.cursor.left < 0) {
      tip.style.display = "none";
      return;
    }
    tip.textContent = lines.map(visible).join("\n");
    tip.style.display = "block";
    var left = u.cursor.left + u.over.offsetLeft + 14;
    if (left + tip.offsetWidth > u.over.offsetLeft + u.over.clientWidth) {
      left = u.cursor.left + u.over.offsetLeft - tip.offsetWidth - 14;
    }
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = (u.over.offsetTop + 8) + "px";
  }

  function width(container) {
    return Math.max(320, Math.min(1300, container.clientWidth || 900));
  }

  function utc(ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); }

  /* Time ticks in ISO UTC like every other time on the page (uPlot's default is local time,
   * 12-hour): the date, and the time of day under it. */
  var TIME_AXIS = {space: 90, size: 50, values: function (u, vals) {
    return shown(u, "xticks", vals.map(function (v) {
      var s = fmtTime(v * 1000);
      return s.slice(0, 10) + "\n" + s.slice(11).replace(/:00Z$/, "Z");
    }));
  }};

  /* Tick labels are drawn on the canvas; the chart keeps them as text too (data-xticks,
   * data-yticks), like data-series, so what the axes say can be read and checked. */
  function shown(u, which, labels) {
    u.root.dataset[which] = labels.join("|");
    return labels;
  }

  /* Byte ticks at round binary values (16 KiB, 32 KiB, ...): never 19.5 / 39.1 KiB, and no
   * two ticks print the same label. */
  var BINARY_INCRS = [];
  for (var b = 0; b <= 50; b++) BINARY_INCRS.push(Math.pow(2, b));

  /* A step chart of bytes on disk over the forecast window (D.overview, or one partition's
   * retention chart): one line per series; hover names the segments deleted at that step. */
  function forecastChart(container, chart, height) {
    if (!chart || !chart.x || chart.x.length < 2) {
      container.appendChild(el("p", "dim", "nothing to draw"));
      return null;
    }
    var series = [{value: function (u, v) { return v === null ? "-" : fmtTime(v * 1000); }}];
    chart.series.forEach(function (s, i) {
      series.push({label: visible(s.label), stroke: COLORS[i % COLORS.length], width: 2,
                   paths: uPlot.paths.stepped({align: 1}), value: function (u, v) { return fmtBytes(v); }});
    });
    var tip = tooltip(container);
    var opts = {
      width: width(container), height: height || 260, tzDate: utc,
      scales: {x: {time: true}, y: {range: function (u, min, max) { return [0, Math.max(1024, max) * 1.1]; }}},
      series: series,
      axes: [TIME_AXIS, {size: 84, incrs: BINARY_INCRS,
                         values: function (u, vals) { return shown(u, "yticks", vals.map(fmtBytes)); }}],
      cursor: {drag: {x: true, y: false}},
      hooks: {setCursor: [function (u) {
        var i = u.cursor.idx;
        if (i === null || i === undefined) { placeTip(u, tip, []); return; }
        var lines = [fmtTime(chart.x[i] * 1000)];
        chart.series.forEach(function (s) { lines.push(s.label + ": " + fmtBytes(s.y[i])); });
        (chart.events[i] || []).forEach(function (e) { lines.push("deleted " + e); });
        placeTip(u, tip, lines);
      }]}
    };
    var data = [chart.x].concat(chart.series.map(function (s) { return s.y; }));
    container.dataset.series = String(chart.series.length);
    return new uPlot(opts, data, container);
  }

  /* Committed offsets of one group over time: a stepped line per topic-partition (the offset
   * in force), and red points where the replay found a regression. */
  function offsetsChart(container, group) {
    var xs = {};
    group.lines.forEach(function (l) { l.points.forEach(function (p) { xs[p[0]] = true; }); });
    var x = Object.keys(xs).map(Number).sort(function (a, b) { return a - b; });
    if (x.length < 1) { container.appendChild(el("p", "dim", "no commits")); return null; }
    var index = {};
    x.forEach(function (v, i) { index[v] = i; });
    var data = [x], series = [{value: function (u, v) { return v === null ? "-" : fmtTime(v * 1000); }}];
    var exact = [];
    group.lines.forEach(function (l, n) {
      var y = new Array(x.length).fill(null), reg = new Array(x.length).fill(null);
      var at = new Array(x.length).fill(null);
      l.points.forEach(function (p) {
        var i = index[p[0]];
        y[i] = p[1];
        at[i] = p;
        if (p[4]) reg[i] = p[1];
      });
      var last = null;
      for (var i = 0; i < y.length; i++) { if (y[i] === null) y[i] = last; else last = y[i]; }
      var label = visible(l.topic + "-" + l.partition), color = COLORS[n % COLORS.length];
      data.push(y);
      series.push({label: label, stroke: color, width: 2, paths: uPlot.paths.stepped({align: 1}),
                   points: {show: false}});
      data.push(reg);
      series.push({label: label + " regression", stroke: "#d00000", fill: "#d00000", width: 0,
                   paths: function () { return null; }, points: {show: true, size: 11, fill: "#d00000"}});
      exact.push(at);
    });
    var tip = tooltip(container);
    var opts = {
      width: width(container), height: 240, tzDate: utc, scales: {x: {time: true}},
      series: series, axes: [TIME_AXIS, {size: 70}], legend: {live: false}, cursor: {drag: {x: true, y: false}},
      hooks: {setCursor: [function (u) {
        var i = u.cursor.idx;
        if (i === null || i === undefined) { placeTip(u, tip, []); return; }
        var lines = [fmtTime(x[i] * 1000)];
        group.lines.forEach(function (l, n) {
          var p = exact[n][i], v = data[1 + 2 * n][i];
          if (v === null) return;
          var where = p ? "  committed here, __consumer_offsets-" + p[2] + " @" + p[3] : "";
          lines.push(l.topic + "-" + l.partition + ": offset " + v + where +
                     (p && p[4] ? "  REGRESSION" : ""));
        });
        placeTip(u, tip, lines);
      }]}
    };
    container.dataset.series = String(group.lines.length);
    return new uPlot(opts, data, container);
  }

  // ------------------------------------------------------------------ paged, sortable tables

  /* A table of many rows, one page of them in the document at a time: filtered and sorted
   * again only when the filter or the order changes, not when the page does. */
  function pagedTable(opts) {
    var state = {sort: opts.sort, dir: opts.dir || 1, page: 0};
    var tableEl = document.getElementById(opts.table), body = tableEl.tBodies[0];
    var pager = document.getElementById(opts.pager);
    var rows = null;
    Array.prototype.forEach.call(tableEl.tHead.rows[0].cells, function (th) {
      var key = th.dataset.key;
      if (!key) return;
      th.addEventListener("click", function () {
        if (state.sort === key) state.dir = -state.dir; else { state.sort = key; state.dir = 1; }
        state.page = 0;
        rows = null;
        draw();
      });
    });
    function draw() {
      if (rows === null) {
        rows = opts.rows().slice();
        if (state.sort) rows.sort(compare(state.sort, state.dir));
      }
      Array.prototype.forEach.call(tableEl.tHead.rows[0].cells, function (th) {
        th.classList.toggle("asc", th.dataset.key === state.sort && state.dir > 0);
        th.classList.toggle("desc", th.dataset.key === state.sort && state.dir < 0);
      });
      var pages = Math.max(1, Math.ceil(rows.length / PAGE));
      state.page = Math.min(state.page, pages - 1);
      body.textContent = "";
      rows.slice(state.page * PAGE, state.page * PAGE + PAGE).forEach(function (r) {
        body.appendChild(opts.row(r));
      });
      pager.textContent = "";
      if (pages > 1) {
        var prev = el("button", null, "previous"), next = el("button", null, "next");
        prev.type = next.type = "button";
        prev.disabled = state.page === 0;
        next.disabled = state.page >= pages - 1;
        prev.addEventListener("click", function () { state.page--; draw(); });
        next.addEventListener("click", function () { state.page++; draw(); });
        pager.appendChild(prev);
        pager.appendChild(el("span", null, "page " + (state.page + 1) + " of " + pages));
        pager.appendChild(next);
      }
      if (opts.counted) opts.counted(rows.length);
    }
    state.reset = function () { state.page = 0; rows = null; draw(); };
    draw();
    return state;
  }

  // ------------------------------------------------------------------ findings

  function findings() {
    var sev = document.getElementById("f-severity"), code = document.getElementById("f-code");
    var topic = document.getElementById("f-topic"), text = document.getElementById("f-text");
    D.finding_codes.forEach(function (c) {
      var o = el("option", null, c.code + " (" + c.count + ")");
      o.value = c.code;
      code.appendChild(o);
    });
    var topics = {};
    D.findings.forEach(function (f) { if (f.topic !== null) topics[f.topic] = true; });
    Object.keys(topics).sort().forEach(function (t) {
      var o = el("option", null, t);
      o.value = t;
      topic.appendChild(o);
    });
    var rank = {error: 0, warning: 1, info: 2};
    D.findings.forEach(function (f) { f.rank = rank[f.severity]; });
    var t = pagedTable({
      table: "findings-table", pager: "findings-pager",
      rows: function () {
        var q = text.value.toLowerCase();
        return D.findings.filter(function (f) {
          return (!sev.value || f.severity === sev.value) && (!code.value || f.code === code.value) &&
            (!topic.value || f.topic === topic.value) &&
            (!q || (f.message + " " + f.path).toLowerCase().indexOf(q) >= 0);
        });
      },
      row: function (f) {
        var tr = el("tr", "finding");
        tr.dataset.severity = f.severity;
        [sevCell(f.severity), el("td", null, breakAfter("code", f.code, "_")), nameCell(show(f.topic)),
         num(f.partition), num(f.offset), el("td", null, f.message),
         el("td", "path", pathEl(f.path + (f.position !== null ? " @" + f.position : ""))),
         el("td", "source", f.source)
        ].forEach(function (c) { tr.appendChild(c); });
        return tr;
      },
      counted: function (n) {
        document.getElementById("f-count").textContent = n + " of " + D.findings.length + " shown";
      }
    });
    [sev, code, topic].forEach(function (s) { s.addEventListener("change", t.reset); });
    text.addEventListener("input", t.reset);
  }

  // ------------------------------------------------------------------ partitions

  /* Each partition's detail is JSON text in one inert string (#report-details): read from the
   * page the first time a detail is opened, and only that partition's slice is parsed. */
  var detailText = null, parsed = {}, details = {};

  function detailOf(p) {
    if (!p.detail) return null;
    if (!(p.id in parsed)) {
      if (detailText === null) detailText = document.getElementById("report-details").textContent;
      parsed[p.id] = JSON.parse(detailText.slice(p.detail[0], p.detail[1]));
    }
    return parsed[p.id];
  }

  function partitions() {
    var text = document.getElementById("p-text");
    var t = pagedTable({
      table: "partitions-table", pager: "partitions-pager", sort: "worst", dir: -1,
      rows: function () {
        var q = text.value.toLowerCase();
        if (!q) return D.partitions;
        return D.partitions.filter(function (p) {
          return (p.topic + "-" + p.partition + " " + p.path).toLowerCase().indexOf(q) >= 0;
        });
      },
      row: function (p) {
        var tr = el("tr");
        var worst = p.errors ? "error" : p.warnings ? "warning" : p.infos ? "info" : "none";
        var found = counts(p);
        var cell = el("td");
        if (p.detail) {
          var b = el("button", "show", "open");
          b.type = "button";
          b.addEventListener("click", function () { openDetail(p.id); });
          cell.appendChild(b);
        } else {
          cell.appendChild(el("span", "dim", "summary only"));
        }
        var where = D.summary.log_dirs.length > 1 ? [el("td", null, p.broker)] : [];
        [nameCell(p.topic), num(p.partition)].concat(where, [el("td", null, p.state), num(fmtBytes(p.size)),
         num(p.segments), num(p.records), timeCell(p.last_timestamp),
         num(p.deletable_bytes ? fmtBytes(p.deletable_bytes) : "-"), num(p.dirty_ratio),
         num(p.transactions + (p.hanging ? " (" + p.hanging + " hanging)" : "")),
         el("td", "sev-" + worst, found), cell]).forEach(function (c) { tr.appendChild(c); });
        return tr;
      },
      counted: function (n) {
        document.getElementById("p-count").textContent = n + " of " + D.partitions.length + " shown";
      }
    });
    text.addEventListener("input", t.reset);
    var box = document.getElementById("partition-details");
    var listed = D.partitions.filter(function (p) { return p.detail && p.listed; });
    listed.sort(compare("topic", 1));
    listed.forEach(function (p) { box.appendChild(detailBox(p)); });
    if (!listed.length) box.appendChild(el("p", "dim", "no partition to detail"));
  }

  /* A partition's <details>: its summary line at once, its detail parsed and drawn when it
   * is first opened. */
  function detailBox(p) {
    var d = el("details", "partition");
    d.id = "p-" + p.id;
    var sev = p.errors ? "error" : p.warnings ? "warning" : null;
    d.appendChild(el("summary", null, [el("b", null, p.topic + "-" + show(p.partition)), "  ",
      el("span", "dim", p.state + " · " + fmtBytes(p.size) + " · " + p.segments + " segment(s)"),
      sev ? el("span", "sev-" + sev, "  " + (p.errors + p.warnings) + " finding(s)") : null]));
    d.addEventListener("toggle", function () { if (d.open) fill(d, p); });
    details[p.id] = d;
    return d;
  }

  function openDetail(id) {
    var p = D.partitions[id];
    if (!p || !p.detail) return;
    var d = details[id];
    if (!d) {  // not listed: added below the listed ones when first opened
      d = detailBox(p);
      document.getElementById("partition-details").appendChild(d);
    }
    d.open = true;
    fill(d, p);
    d.scrollIntoView({block: "start"});
  }

  function fill(d, p) {
    if (d.dataset.filled) return;
    d.dataset.filled = "1";
    var x = detailOf(p);
    d.appendChild(kv([["path", pathEl(p.path)], ["log dir", pathEl(p.log_dir)],
                      ["records", show(p.records)],
                      ["timestamps", fmtTime(p.first_timestamp) + " to " + fmtTime(p.last_timestamp)]]));
    if (x.segments.length) d.appendChild(segments(x.segments));
    if (x.retention) d.appendChild(retention(x.retention));
    if (x.compaction) d.appendChild(compaction(x.compaction));
    if (x.transactions) d.appendChild(transactions(x.transactions));
    if (x.producers) d.appendChild(producers(x.producers));
    if (x.samples) d.appendChild(samples(x.samples));
    if (x.samples_read === false) {
      d.appendChild(el("p", "dim", "First and last records: read for the most telling partitions only " +
                                   "(segtools dump shows them)."));
    }
    var chartBox = d.querySelector(".chart.retention");
    if (chartBox) forecastChart(chartBox, x.retention.chart, 200);
  }

  function segments(rows) {
    var box = el("div", null, el("h4", null, "Segments and retention verdicts"));
    var body = rows.map(function (s) {
      if (s.gap !== undefined) {
        var td = el("td", null, "… " + s.gap + " segment(s) not shown …");
        td.colSpan = 8;
        return [td];
      }
      var verdict = s.deletable === undefined ? el("td", "dim", "-") :
        el("td", s.deletable ? "del" : "keep", s.deletable ? "DELETE" : "keep");
      var why = el("td", null, s.reason ? [el("b", null, s.reason), el("br"), el("span", "dim", s.reason_text)] : "-");
      if (s.stale && s.stale.count) {
        why.appendChild(el("div", "sev-warning", "holds " + s.stale.count + " record(s) older than retention (" +
                                                fmtBytes(s.stale.bytes) + ")"));
      }
      return [el("td", "mono", "@" + s.base_offset + ".." + show(s.last_offset) + (s.active ? " (active)" : "")),
              num(fmtBytes(s.size)), num(s.batches), num(s.records),
              el("td", null, fmtTime(s.max_timestamp) + " (" + s.max_timestamp_source + ")"),
              el("td", null, (s.codecs || []).join(",") + (s.crc_errors ? " · " + s.crc_errors + " bad CRC" : "")),
              verdict, why];
    });
    box.appendChild(table(["segment", "size", "batches", "records", "newest timestamp (source)",
                           "codecs", "verdict", "reason"], body));
    return box;
  }

  function retention(r) {
    var box = el("div", null, el("h4", null, "Retention"));
    var pairs = Object.keys(r.config).map(function (k) {
      var v = r.config[k];
      return [k, (Array.isArray(v.value) ? v.value.join(",") : String(v.value)) + "  [" + v.source + "]"];
    });
    pairs.push(["high watermark", show(r.high_watermark) + (r.high_watermark_assumed ? " (assumed)" : "")]);
    pairs.push(["log start / end offset", show(r.log_start_offset) + " / " + show(r.log_end_offset)]);
    pairs.push(["deletable now", fmtBytes(r.deletable_bytes) + " in " + r.deletable_segments + " segment(s)"]);
    if (r.forecast_end !== undefined) {
      pairs.push(["forecast", fmtBytes(r.size) + " now, " + fmtBytes(r.forecast_end_size) + " at " +
                  fmtTime(r.forecast_end)]);
    }
    box.appendChild(kv(pairs));
    r.callouts.forEach(function (c) {
      box.appendChild(el("div", "callout", [el("b", null, c.code), ": ", c.message]));
    });
    if (r.chart) box.appendChild(el("div", "chart retention"));
    return box;
  }

  function compaction(c) {
    var box = el("div", null, el("h4", null, "Compaction"));
    if (c.not_compacted) box.appendChild(el("div", "callout", c.not_compacted));
    box.appendChild(kv([
      ["dirty ratio", c.dirty_ratio + " (min.cleanable.dirty.ratio " + c.min_cleanable_dirty_ratio + ")"],
      ["next clean", c.would_clean_text],
      ["clean | dirty", fmtBytes(c.clean_bytes) + " | " + fmtBytes(c.cleanable_bytes)],
      ["first dirty offset", show(c.first_dirty_offset) + " (" + c.first_dirty_source + ")"],
      ["first uncleanable", show(c.first_uncleanable_offset) + " (" + c.first_uncleanable_reason + ")"],
      ["key reuse", c.records + " records, " + c.keyed_records + " keyed, " + c.distinct_keys +
                    " distinct keys; " + c.superseded_records + " superseded (" + fmtBytes(c.superseded_bytes) + ")"],
      ["tombstones", c.tombstones + (c.oldest_tombstone !== null ? ", oldest " + fmtTime(c.oldest_tombstone) : "")],
      ["the next clean removes", "~" + c.removed_records + " records (~" + fmtBytes(c.removed_bytes) + ")"]]));
    if (c.top_keys.length) {
      box.appendChild(el("div", "dim", "keys with most versions"));
      box.appendChild(table(["key", "versions", "offsets", "segments", "latest"], c.top_keys.map(function (k) {
        return [el("td", "mono data", show(k.key)), num(k.versions), el("td", null, "@" + k.first_offset + "..@" + k.last_offset),
                num(k.segments), el("td", null, k.latest_is_tombstone ? "tombstone" : "value")];
      })));
    }
    if (c.tombstones_listed.length) {
      box.appendChild(el("div", "dim", "tombstones"));
      box.appendChild(table(["offset", "key", "written", "next clean"], c.tombstones_listed.map(function (t) {
        return [num(t.offset), el("td", "mono data", show(t.key)), el("td", null, fmtTime(t.timestamp)), el("td", null, t.fate_text)];
      })));
    }
    c.notes.forEach(function (n) { box.appendChild(el("p", "dim", "note: " + n)); });
    return box;
  }

  function transactions(t) {
    var box = el("div", null, el("h4", null, "Transactions"));
    box.appendChild(kv([["last stable offset", t.last_stable_offset + " (log end " + t.log_end_offset + ")"],
                        ["transactions", t.total + ": " + t.committed + " committed, " + t.aborted +
                                         " aborted, " + t.open + " open"]]));
    if (t.hanging.length) box.appendChild(hangingTable(t.hanging));
    if (t.transactions.length) {
      box.appendChild(table(["producer", "epoch", "offsets", "batches", "records", "first", "marker"],
        t.transactions.map(function (x) {
          var open = x.marker === "OPEN";
          return [num(x.producer_id), num(x.producer_epoch),
                  el("td", null, show(x.first_offset) + ".." + show(x.last_data_offset)),
                  num(x.batches), num(x.records), el("td", null, fmtTime(x.first_timestamp)),
                  el("td", open ? "sev-warning" : null, open ? "OPEN" : x.marker + " @" + x.marker_offset)];
        })));
    }
    return box;
  }

  function hangingTable(rows) {
    return table(["partition", "producer", "transactional id", "first offset", "records", "open for",
                  "pins last stable offset", "held back"], rows.map(function (h) {
      return [el("td", "sev-warning", pathEl(h.partition)), num(h.producer_id + " (epoch " + h.producer_epoch + ")"),
              el("td", null, show(h.transactional_id)), num(h.first_offset), num(h.records),
              num(fmtDur(h.age_ms)), num(h.last_stable_offset), num(h.offsets_held_back)];
    }));
  }

  function producers(p) {
    var box = el("div", null, el("h4", null, "Producers"));
    box.appendChild(table(["producer", "batches", "records", "bytes", "records/batch p50 · p90 · max",
                           "bytes/batch p50", "codecs", "verdict"], p.producers.map(function (g) {
      var who = g.producer_id === -1 ? "non-idempotent" : g.producer_id + " epoch " + g.producer_epoch;
      var r = g.records_per_batch;
      var verdict = g.verdict + (g.ceiling_bytes ? " (closes at ~" + fmtBytes(g.ceiling_bytes) + ")" :
                                 g.linger_ms !== null ? " (linger.ms ~" + g.linger_ms + ")" : "");
      return [el("td", null, who), num(g.batches), num(g.records), num(fmtBytes(g.bytes)),
              num(r.p50 + " · " + r.p90 + " · " + r.max), num(fmtBytes(g.bytes_per_batch.p50)),
              el("td", null, Object.keys(g.codecs).join(", ")), el("td", null, verdict)];
    })));
    if (p.events.length) {
      box.appendChild(table(["sequence", "producer", "offset", "base sequence", "expected", "explained by"],
        p.events.map(function (e) {
          return [el("td", "sev-warning", e.kind), num(e.producer_id + " epoch " + e.producer_epoch), num(e.offset),
                  num(e.base_sequence), num(e.expected_sequence), el("td", null, show(e.explained_by))];
        })));
    }
    return box;
  }

  function samples(s) {
    var box = el("div", null, el("h4", null, "First and last records"));
    var rows = [];
    [["first", s.first], ["last", s.last]].forEach(function (part) {
      part[1].forEach(function (r) {
        // a decoded payload (its schema's JSON) stands where the bytes would
        var key = r.key_decoded !== undefined ? r.key_decoded : (r.key === null ? "null" : r.key);
        var value = r.value_decoded !== undefined ? r.value_decoded
          : (r.value === null ? "null (tombstone)" : r.value);
        if (r.value_payload_error) value += "  [" + r.value_payload_error + "]";
        rows.push([el("td", "dim", part[0]), num(r.offset), el("td", null, fmtTime(r.timestamp)),
                   el("td", "mono data", key),
                   el("td", "mono data", value),
                   el("td", "mono data", r.headers.map(function (h) { return h[0] + "=" + (h[1] === null ? "null" : h[1]); }).join("\n"))]);
      });
    });
    if (!rows.length) { box.appendChild(el("p", "dim", "no data records")); return box; }
    box.appendChild(table(["", "offset", "timestamp", "key", "value", "headers"], rows, "records"));
    return box;
  }

  // ------------------------------------------------------------------ forensics sections

  function transactionsSection() {
    var box = document.getElementById("transactions-body");
    if (D.hanging.length) {
      box.appendChild(el("h4", "sev-warning", D.hanging.length + " hanging transaction(s)"));
      box.appendChild(hangingTable(D.hanging));
    } else {
      box.appendChild(el("p", null, "No hanging transaction."));
    }
    if (D.open_transactional_ids.length) {
      box.appendChild(el("h4", null, "Transactional ids still open in __transaction_state"));
      box.appendChild(table(["transactional id", "state", "producer", "partitions", "started", "where"],
        D.open_transactional_ids.map(function (c) {
          var parts = c.partitions.map(function (p) {
            return p.topic + "[" + p.partitions.join(",") + "]"; }).join(" ") || "-";
          return [el("td", "mono data", c.transactional_id), el("td", null, show(c.status)),
                  num(show(c.producer_id) + " epoch " + show(c.producer_epoch)), el("td", null, parts),
                  timeCell(c.start_timestamp),
                  el("td", "mono", "__transaction_state-" + c.log_partition + " @" + c.log_offset)];
        })));
    }
  }

  var groupCharts = [];

  function groupsSection() {
    var box = document.getElementById("groups-body");
    if (!D.groups.length) { box.appendChild(el("p", "dim", "No __consumer_offsets partitions in this tree.")); return; }
    box.appendChild(el("p", null, D.groups.length + " group(s); " + D.offset_regressions + " offset regression(s)."));
    D.groups.forEach(function (g, n) {
      var d = el("details", "group");
      d.id = "g-" + n;
      var regs = g.regressions.length;
      d.appendChild(el("summary", null, [el("b", null, g.group), "  ",
        el("span", "dim", g.kind + ", " + g.state + (g.generation !== null ? ", generation " + g.generation : "") +
                          " · " + g.offsets + " committed offset(s) · __consumer_offsets-" + g.log_partition),
        regs ? el("span", "sev-warning", "  " + regs + " regression(s)") : null]));
      var chart = el("div", "chart offsets");
      d.appendChild(chart);
      if (regs) {
        d.appendChild(table(["when", "partition", "offset", "change", "group state", "where"], g.regressions.map(function (r) {
          return [el("td", null, fmtTime(r.timestamp)), el("td", null, r.topic + "-" + r.partition),
                  num(r.previous_offset + " → " + r.offset), el("td", "sev-warning num", r.delta),
                  el("td", null, show(r.group_state) + (r.generation !== null ? " (generation " + r.generation + ")" : "")),
                  el("td", "mono", "__consumer_offsets-" + r.log_partition + " @" + r.log_offset)];
        })));
      }
      var drawn = false;
      function draw() { if (!drawn && d.open) { drawn = true; offsetsChart(chart, g); } }
      d.addEventListener("toggle", draw);
      groupCharts.push(function () { d.open = true; draw(); });
      if (regs) { d.open = true; }
      box.appendChild(d);
      draw();
    });
  }

  function divergenceSection() {
    var box = document.getElementById("divergence-body");
    if (!D.divergence.length) {
      box.appendChild(el("p", "dim", "No partition is held by more than one log dir here: nothing to compare."));
      return;
    }
    D.divergence.forEach(function (v) {
      var d = el("details", "box");
      d.open = v.status === "diverged";
      d.appendChild(el("summary", null, [el("b", null, v.partition), ": ",
        el("span", v.status === "diverged" ? "sev-error" : null, v.status),
        v.first_difference_offset !== null ? " at offset " + v.first_difference_offset : ""]));
      d.appendChild(table(["replica", "offsets", "batches", "latest leader epoch", "path"], v.copies.map(function (c) {
        return [el("td", null, c.replica + (c.replica === v.presumed_leader ? " (presumed leader)" : "")),
                el("td", null, show(c.start_offset) + ".." + (c.end_offset - 1)), num(c.batches),
                num(c.latest_leader_epoch), el("td", null, pathEl(c.path))];
      })));
      if (v.only_on.length) {
        d.appendChild(table(["only on", "offsets", "leader epoch", "records"], v.only_on.map(function (u) {
          return [el("td", null, u.replica), el("td", null, u.start_offset + ".." + u.end_offset),
                  num(u.leader_epoch), num(u.records)];
        })));
      }
      v.truncations.forEach(function (t) {
        d.appendChild(el("p", t.discarded_offsets ? "truncation sev-warning" : "truncation", t.text));
      });
      box.appendChild(d);
    });
  }

  // ------------------------------------------------------------------ start

  forecastChart(document.getElementById("overview-chart"), D.overview, 300);
  findings();
  partitions();
  transactionsSection();
  groupsSection();
  divergenceSection();

  // On paper every detail is open and drawn (a printed page cannot be clicked).
  window.addEventListener("beforeprint", function () {
    Object.keys(details).forEach(function (id) { details[id].open = true; fill(details[id], D.partitions[id]); });
    groupCharts.forEach(function (f) { f(); });
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });
  document.body.dataset.ready = "1";
})();
