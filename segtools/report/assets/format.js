/* segtools report: the formatting both of the page's scripts use (report.js draws the tables
 * and charts, whatif.js the what-if section), defined once. Pure functions from a value to the
 * text shown; no markup. */
var SegtoolsFormat = (function () {
  "use strict";

  /* Control characters (terminal escapes: ESC, BEL, C1) and the JavaScript line ends are shown
   * as \xNN / \uNNNN, as the command line shows them: visible, and inert. */
  function visible(text) {
    return String(text).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/g, function (c) {
      var n = c.charCodeAt(0);
      return n < 0x100 ? "\\x" + ("0" + n.toString(16)).slice(-2) : "\\u" + n.toString(16);
    });
  }

  function fmtBytes(n) {
    if (n === null || n === undefined) return "-";
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0, v = Math.abs(n);
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (n < 0 ? "-" : "") + (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[i];
  }

  function fmtTime(ms) {
    if (ms === null || ms === undefined || ms < 0) return "-";
    var d = new Date(ms);
    if (isNaN(d.getTime())) return String(ms);
    return d.toISOString().replace(".000Z", "Z");
  }

  return {visible: visible, fmtBytes: fmtBytes, fmtTime: fmtTime};
})();
