/* policy-scheduler report: renders the tables embedded in #report-data a page at a time (filter, sort, page).
   Plain ES2017, no dependencies, nothing fetched. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);

  // One rule per quantity, the same as policy_scheduler/report/units.py: cores with two decimals, memory in
  // the largest binary unit below it with one, percentages with one, seconds with three.
  function fixed(n, digits) {
    return n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  var UNITS = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  var FORMATS = {
    int: function (v) { return v.toLocaleString("en-US"); },
    cores: function (v) { return fixed(v / 1000, 2); },
    bytes: function (v) {
      if (Math.abs(v) < 1024) { return Math.trunc(v) + " B"; }
      var i = 0;
      v /= 1024;
      while (Math.abs(v) >= 1024 && i < UNITS.length - 1) { v /= 1024; i += 1; }
      return fixed(v, 1) + " " + UNITS[i];
    },
    pct: function (v) { return fixed(v, 1) + "%"; },
    seconds: function (v) { return fixed(v, 3) + " s"; }
  };
  function format(col, v) {
    if (v === null || v === undefined || v === "") { return ""; }
    var f = FORMATS[col.fmt];
    return f ? f(v) : String(v);
  }
  function heatColor(score) {
    var t = Math.max(0, Math.min(1, score / 10));
    var lo = [247, 251, 255], hi = [8, 81, 156];
    return "rgb(" + lo.map(function (a, i) { return Math.round(a + (hi[i] - a) * t); }).join(",") + ")";
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function Table(root, spec) {
    this.root = root;
    this.spec = spec;
    this.cols = spec.columns;
    this.strings = spec.strings || [];
    this.classCol = this.cols.findIndex(function (c) { return c.type === "class"; });
    this.tips = {};
    var self = this;
    this.cols.forEach(function (c, i) { if (c.type === "tip") { self.tips[c.tipFor] = i; } });
    this.visible = this.cols.map(function (c, i) { return i; })
      .filter(function (i) { return self.cols[i].type !== "class" && self.cols[i].type !== "tip"; });
    this.rows = spec.rows;
    this.view = this.rows;
    this.page = 0;
    this.pageSize = spec.pageSize || 25;
    this.query = "";
    this.preset = "";
    this.sortCol = -1;
    this.sortDir = 1;
    this.haystacks = null;
    this.build();
    this.refresh();
  }
  Table.prototype.value = function (row, i) {
    var c = this.cols[i], v = row[i];
    return c.pooled && typeof v === "number" ? this.strings[v] : v;
  };
  Table.prototype.haystack = function (r) {
    if (!this.haystacks) { this.haystacks = new Array(this.rows.length); }
    var h = this.haystacks[r];
    if (h === undefined) {
      var row = this.rows[r], parts = [];
      for (var i = 0; i < this.cols.length; i++) {
        var t = this.cols[i].type;
        if (t === "text" || t === "tip") { parts.push(this.value(row, i)); }
        else if (t === "verdict" && row[i] > 0) { parts.push(this.strings[row[i] - 1]); }
      }
      h = this.haystacks[r] = parts.join("\u0001").toLowerCase();
    }
    return h;
  };
  Table.prototype.build = function () {
    var self = this;
    var bar = el("div", "dt-toolbar");
    this.input = el("input");
    this.input.type = "search";
    this.input.placeholder = "Filter rows…";
    this.input.setAttribute("aria-label", "Filter rows");
    this.input.addEventListener("input", function () { self.query = self.input.value.trim().toLowerCase(); self.page = 0; self.refresh(); });
    bar.appendChild(this.input);
    if (this.spec.presets && this.spec.presets.length && this.classCol >= 0) {
      var sel = el("select");
      sel.setAttribute("aria-label", "Show");
      sel.appendChild(new Option("all rows", ""));
      this.spec.presets.forEach(function (p) { sel.appendChild(new Option("only " + p.label, p.cls)); });
      sel.addEventListener("change", function () { self.preset = sel.value; self.page = 0; self.refresh(); });
      bar.appendChild(sel);
    }
    this.count = el("span", "dt-count");
    bar.appendChild(this.count);
    this.root.appendChild(bar);
    var scroll = el("div", "dt-scroll");
    var table = el("table", "dt");
    var thead = el("thead"), tr = el("tr");
    this.headers = [];
    this.visible.forEach(function (i) {
      var c = self.cols[i], th = el("th", c.vertical ? "vert" : (c.type === "num" || c.type === "bar" ? "num" : ""));
      var label = el("span", "", c.label);
      th.appendChild(label);
      if (c.title) { th.title = c.title; }
      if (c.type === "heat" && c.weight !== undefined && c.weight !== null) { label.textContent = c.label + " ×" + c.weight; }
      th.addEventListener("click", function () { self.sortBy(i); });
      self.headers.push([i, th]);
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    table.appendChild(thead);
    this.tbody = el("tbody");
    table.appendChild(this.tbody);
    scroll.appendChild(table);
    this.root.appendChild(scroll);
    this.emptyNote = el("div", "dt-empty", this.spec.empty || "Nothing to show.");
    this.root.appendChild(this.emptyNote);
    var pager = el("div", "dt-pager");
    this.prev = el("button", "", "‹ previous");
    this.next = el("button", "", "next ›");
    this.pageInfo = el("span", "dt-count");
    this.prev.type = this.next.type = "button";
    this.prev.addEventListener("click", function () { self.page -= 1; self.render(); });
    this.next.addEventListener("click", function () { self.page += 1; self.render(); });
    var size = el("select");
    size.setAttribute("aria-label", "Rows per page");
    [this.pageSize, 50, 100, 250].filter(function (v, k, a) { return a.indexOf(v) === k; })
      .forEach(function (n) { size.appendChild(new Option(n + " per page", String(n))); });
    size.addEventListener("change", function () { self.pageSize = Number(size.value); self.page = 0; self.render(); });
    [this.prev, this.pageInfo, this.next, size].forEach(function (e) { pager.appendChild(e); });
    this.pager = pager;
    this.root.appendChild(pager);
  };
  Table.prototype.sortBy = function (i) {
    this.sortDir = this.sortCol === i ? -this.sortDir : (this.cols[i].type === "text" ? 1 : -1);
    this.sortCol = i;
    this.page = 0;
    this.refresh();
  };
  Table.prototype.sortKey = function (row, i) {
    var c = this.cols[i], v = row[i];
    if (c.type === "verdict") { return v === null ? -1 : (v === 0 ? 0 : 1); }
    return this.value(row, i);
  };
  Table.prototype.refresh = function () {
    var self = this, q = this.query, preset = this.preset, idx = [];
    for (var r = 0; r < this.rows.length; r++) {
      var row = this.rows[r];
      if (preset && (" " + row[this.classCol] + " ").indexOf(" " + preset + " ") < 0) { continue; }
      if (q && this.haystack(r).indexOf(q) < 0) { continue; }
      idx.push(r);
    }
    if (this.sortCol >= 0) {
      var i = this.sortCol, dir = this.sortDir;
      idx.sort(function (a, b) {
        var x = self.sortKey(self.rows[a], i), y = self.sortKey(self.rows[b], i);
        if (x === y) { return a - b; }
        if (x === null || x === undefined || x === "") { return 1; }
        if (y === null || y === undefined || y === "") { return -1; }
        if (typeof x === "number" && typeof y === "number") { return (x - y) * dir; }
        return String(x).localeCompare(String(y), "en", { numeric: true }) * dir;
      });
    }
    this.view = idx;
    this.headers.forEach(function (h) {
      h[1].classList.toggle("sorted-asc", h[0] === self.sortCol && self.sortDir === 1);
      h[1].classList.toggle("sorted-desc", h[0] === self.sortCol && self.sortDir === -1);
    });
    this.render();
  };
  Table.prototype.cell = function (row, i) {
    var c = this.cols[i], v = row[i], td = el("td");
    switch (c.type) {
      case "num":
        td.className = "num";
        td.textContent = format(c, v);
        break;
      case "bar":
        td.className = "bar";
        td.textContent = format(c, v);
        if (typeof v === "number") {
          var w = Math.max(0, Math.min(100, v));
          td.style.background = "linear-gradient(90deg, var(--bar) " + w + "%, transparent " + w + "%)";
        }
        break;
      case "verdict":
        if (v === null || v === undefined) { td.className = "verdict na"; td.textContent = "·"; td.title = "not evaluated"; }
        else if (v === 0) { td.className = "verdict pass"; td.textContent = "✓"; td.title = c.label + ": passes"; }
        else { td.className = "verdict fail"; td.textContent = "✗"; td.title = c.label + ": " + this.strings[v - 1]; }
        break;
      case "badge":
        if (v !== null && v !== undefined && v !== "") { td.appendChild(el("span", "badge " + v, String(v))); }
        break;
      case "heat":
        td.className = "heat";
        if (typeof v === "number") {
          td.textContent = String(v);
          td.style.background = heatColor(v);
          if (v >= 6) { td.style.color = "#fff"; }
          td.title = c.label + ": score " + v + (c.weight !== undefined && c.weight !== null ? " × weight " + c.weight + " = " + v * c.weight : "");
        }
        break;
      default:
        var text = this.value(row, i);
        td.textContent = text === null || text === undefined ? "" : String(text);
        if (td.textContent.length > 60) { td.title = td.textContent; }
        if (c.wide) { td.className = "wide"; }
    }
    var tip = this.tips[i];
    if (tip !== undefined) {
      var t = this.value(row, tip);
      if (t) { td.title = t; }
    }
    return td;
  };
  Table.prototype.render = function () {
    var pages = Math.max(1, Math.ceil(this.view.length / this.pageSize));
    this.page = Math.max(0, Math.min(this.page, pages - 1));
    var start = this.page * this.pageSize, end = Math.min(this.view.length, start + this.pageSize);
    var frag = document.createDocumentFragment();
    for (var k = start; k < end; k++) {
      var row = this.rows[this.view[k]], tr = el("tr", this.classCol >= 0 ? row[this.classCol] : "");
      for (var j = 0; j < this.visible.length; j++) { tr.appendChild(this.cell(row, this.visible[j])); }
      frag.appendChild(tr);
    }
    this.tbody.replaceChildren(frag);
    var total = this.rows.length, shown = this.view.length;
    this.count.textContent = shown === total ? total.toLocaleString("en-US") + " rows"
      : shown.toLocaleString("en-US") + " of " + total.toLocaleString("en-US") + " rows";
    this.emptyNote.style.display = shown ? "none" : "";
    this.pageInfo.textContent = shown ? (start + 1) + "–" + end + " of " + shown.toLocaleString("en-US") : "";
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
    this.pager.style.display = shown > (this.spec.pageSize || 25) ? "" : "none";
  };

  document.querySelectorAll("[data-table]").forEach(function (root) {
    var spec = data.tables[root.getAttribute("data-table")];
    if (spec) { root.table = new Table(root, spec); }
  });
})();
