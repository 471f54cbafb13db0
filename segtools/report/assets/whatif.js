/* segtools report, the what-if section: per topic, bytes on disk over time under today's config
 * and under the proposed one (a sawtooth against a flat line), and the oldest record's age
 * beside it with the retention.ms it should stay near. Drawn with uPlot from the page's JSON
 * (D.what_if, laid out by segtools/report/whatif.py). As report.js: no markup is built from
 * data (strings go in through textContent or uPlot's text labels), nothing is fetched. */
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("report-data").textContent);
  var W = D.what_if;
  var root = document.getElementById("what-if");
  if (!W || !root) return;
  var CURRENT = "#d62728", PROPOSED = "#1f77b4", PROMISE = "#7f7f7f";

  var visible = SegtoolsFormat.visible, fmtBytes = SegtoolsFormat.fmtBytes,
      fmtTime = SegtoolsFormat.fmtTime;

  /* As segtools.units.format_duration: two units at most ("7d 2h", "3h 05m", "42s"). */
  function fmtDur(ms) {
    if (ms === null || ms === undefined) return "-";
    var sign = ms < 0 ? "-" : "", s = Math.floor(Math.abs(ms) / 1000);
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600),
        m = Math.floor(s % 3600 / 60), sec = s % 60;
    var two = function (n) { return ("0" + n).slice(-2); };
    if (d >= 3 * 365) return sign + Math.floor(d / 365) + "y";
    if (d) return sign + d + "d" + (h ? " " + h + "h" : "");
    if (h) return sign + h + "h " + two(m) + "m";
    if (m) return sign + m + "m " + two(sec) + "s";
    if (s === 0 && ms) return sign + Math.abs(ms) + "ms";
    return sign + sec + "s";
  }

  function utc(ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); }

  /* Tick labels are drawn on the canvas; as in report.js the chart keeps them as text too
   * (data-xticks, data-yticks), so what the axes say can be read and checked. */
  function shown(u, which, labels) {
    u.root.dataset[which] = labels.join("|");
    return labels;
  }

  var TIME_AXIS = {space: 90, size: 50, values: function (u, vals) {
    return shown(u, "xticks", vals.map(function (v) {
      var s = fmtTime(v * 1000);
      return s.slice(0, 10) + "\n" + s.slice(11).replace(/:00Z$/, "Z");
    }));
  }};

  var BINARY_INCRS = [];
  for (var b = 0; b <= 50; b++) BINARY_INCRS.push(Math.pow(2, b));
  var H = 3600e3, DAY = 24 * H;
  var AGE_INCRS = [60e3, 10 * 60e3, 30 * 60e3, H, 3 * H, 6 * H, 12 * H, DAY, 2 * DAY,
                   7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY];

  function line(label, stroke, format, dash) {
    return {label: visible(label), stroke: stroke, width: dash ? 1.5 : 2, dash: dash,
            spanGaps: true, value: function (u, v) { return format(v); }};
  }

  function draw(box, x, ys, lines, yAxis, ymax) {
    var parent = box.parentNode;
    var w = Math.max(320, Math.min(640, Math.floor(((parent.clientWidth || 900) - 12) / 2)));
    var opts = {
      width: w, height: 240, tzDate: utc, padding: [12, 36, 0, 0],
      scales: {x: {time: true}, y: {range: function (u, min, max) { return [0, Math.max(ymax, max) * 1.1]; }}},
      series: [{value: function (u, v) { return v === null ? "-" : fmtTime(v * 1000); }}].concat(lines),
      axes: [TIME_AXIS, yAxis],
      cursor: {drag: {x: true, y: false}}
    };
    box.dataset.series = String(lines.length);
    return new uPlot(opts, [x].concat(ys), box);
  }

  var drawn = 0;
  W.topics.forEach(function (t, i) {
    var c = t.chart;
    if (!c || c.x.length < 2) return;
    var proposed = "proposed: " + t.change_text;
    draw(document.getElementById("whatif-size-" + i), c.x, c.size,
         [line("current config", CURRENT, fmtBytes), line(proposed, PROPOSED, fmtBytes)],
         {size: 84, incrs: BINARY_INCRS,
          values: function (u, vals) { return shown(u, "yticks", vals.map(fmtBytes)); }}, 1024);
    var ages = c.age.slice(), lines = [line("current config", CURRENT, fmtDur), line(proposed, PROPOSED, fmtDur)];
    if (c.retention_ms !== null) {
      ages.push(c.x.map(function () { return c.retention_ms; }));
      lines.push(line(c.retention_name, PROMISE, fmtDur, [6, 4]));
    }
    draw(document.getElementById("whatif-age-" + i), c.x, ages, lines,
         {size: 70, incrs: AGE_INCRS,
          values: function (u, vals) { return shown(u, "yticks", vals.map(fmtDur)); }},
         c.retention_ms || H);
    drawn++;
  });
  root.dataset.drawn = String(drawn);
})();
