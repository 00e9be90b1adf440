// report.html's own script: draws the plot specs of report_plots.cc (the JSON
// in the element with id "report-plots") with Chart.js, which the page embeds. Chart.js
// gives the values on hover and the legend that toggles series; this script
// adds what Debian's Chart.js does not package: fault-event markers and a
// zoom on the time axis (drag across a time plot, or type a range), shared by
// every time plot so they stay aligned.
(function () {
  "use strict";
  var specs = JSON.parse(document.getElementById("report-plots").textContent);
  var font = '"DejaVu Sans", Helvetica, Arial, sans-serif';
  Chart.defaults.font.family = font;
  Chart.defaults.color = "#343a40";

  function rgba(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function fmt(v) {
    if (v === null || !isFinite(v)) return "n/a";
    return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(4);  // 4 significant digits
  }
  function secs(t) { return +t.toFixed(3) + " s"; }

  // Fault events: a dashed vertical line each, labelled in full at the top
  // when the labels fit in two rows, else with their number in the key below
  // the plot. Reference line: a dashed horizontal line (retained = 100%).
  var markers = {
    id: "reportMarkers",
    // Room for two rows of event labels between the legend and the plot area.
    beforeInit: function (chart) {
      var evs = chart.canvas.$spec.events;
      if (!evs || !evs.length || !chart.legend) return;
      var fit = chart.legend.fit;
      chart.legend.fit = function () {
        fit.call(this);
        this.height += 28;
      };
    },
    afterDatasetsDraw: function (chart) {
      var spec = chart.canvas.$spec, ctx = chart.ctx, area = chart.chartArea, xs = chart.scales.x;
      ctx.save();
      ctx.font = "11px " + font;
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 1.2;
      if (spec.hline) {
        var y = chart.scales.y.getPixelForValue(spec.hline.y);
        ctx.strokeStyle = "#868e96";
        ctx.beginPath(); ctx.moveTo(area.left, y); ctx.lineTo(area.right, y); ctx.stroke();
        ctx.fillStyle = "#868e96";
        ctx.textAlign = "right";
        ctx.fillText(spec.hline.label, area.right - 4, y - 4);
      }
      var evs = (spec.events || []).filter(function (e) { return e.t >= xs.min && e.t <= xs.max; });
      var rowEnd = [-Infinity, -Infinity], places = [], full = true;
      evs.forEach(function (e) {
        var x = xs.getPixelForValue(e.t), w = ctx.measureText(e.label).width;
        var row = rowEnd[0] < x - w / 2 - 6 ? 0 : rowEnd[1] < x - w / 2 - 6 ? 1 : -1;
        if (row < 0) { full = false; return; }
        rowEnd[row] = x + w / 2;
        places.push({ x: x, row: row, e: e });
      });
      ctx.strokeStyle = "#495057";
      ctx.fillStyle = "#212529";
      ctx.textAlign = "center";
      evs.forEach(function (e, k) {
        var x = xs.getPixelForValue(e.t);
        ctx.beginPath(); ctx.moveTo(x, area.top - 2); ctx.lineTo(x, area.bottom); ctx.stroke();
        if (!full) ctx.fillText(String(e.n), x, area.top - 6 - (k % 2) * 12);
      });
      if (full) places.forEach(function (p) { ctx.fillText(p.e.label, p.x, area.top - 6 - p.row * 13); });
      ctx.restore();
    }
  };

  // Zoom on the time axis: one range [from, to] for every time plot.
  var timeCharts = [], full = null;
  function setRange(from, to) {
    if (!(to > from)) return;
    timeCharts.forEach(function (c) {
      c.options.scales.x.min = from;
      c.options.scales.x.max = to;
      c.update("none");
    });
    document.querySelectorAll(".zoom-from").forEach(function (i) { i.value = +from.toFixed(4); });
    document.querySelectorAll(".zoom-to").forEach(function (i) { i.value = +to.toFixed(4); });
  }
  var dragZoom = {
    id: "reportDragZoom",
    afterEvent: function (chart, args) {
      var e = args.event, area = chart.chartArea;
      var inside = e.x >= area.left && e.x <= area.right && e.y >= area.top && e.y <= area.bottom;
      if (e.type === "mousedown" && inside) {
        chart.$drag = { from: e.x, to: e.x };
      } else if (e.type === "mousemove" && chart.$drag) {
        chart.$drag.to = Math.max(area.left, Math.min(area.right, e.x));
        args.changed = true;
      } else if ((e.type === "mouseup" || e.type === "mouseout") && chart.$drag) {
        var d = chart.$drag;
        chart.$drag = null;
        args.changed = true;
        if (e.type === "mouseup" && Math.abs(d.to - d.from) > 5) {
          var a = chart.scales.x.getValueForPixel(Math.min(d.from, d.to));
          var b = chart.scales.x.getValueForPixel(Math.max(d.from, d.to));
          setRange(a, b);
        }
      }
    },
    afterDraw: function (chart) {
      var d = chart.$drag, area = chart.chartArea;
      if (!d || d.to === d.from) return;
      chart.ctx.save();
      chart.ctx.fillStyle = "rgba(28,126,214,0.15)";
      chart.ctx.fillRect(Math.min(d.from, d.to), area.top, Math.abs(d.to - d.from), area.bottom - area.top);
      chart.ctx.restore();
    }
  };

  function axisOptions(a, spec) {
    var o = { type: a.type, title: { display: !!a.title, text: a.title, font: { size: 12 } } };
    ["min", "max", "suggestedMax"].forEach(function (k) { if (a[k] !== undefined) o[k] = a[k]; });
    if (a.type === "logarithmic")
      o.ticks = { maxRotation: 0, callback: function (v) { var l = Math.log10(v); return Math.abs(l - Math.round(l)) < 1e-9 ? String(v) : ""; } };
    if (spec.time && a.type === "linear" && a.title === "time (s)") o.ticks = { maxTicksLimit: 11 };
    return o;
  }

  specs.forEach(function (spec) {
    var canvas = document.getElementById(spec.canvas);
    if (!canvas) return;
    var hbar = spec.kind === "hbar";
    // A cdf is a line whose values (the report's numbers) are on x, its y the
    // share of samples within them; each point's index is the same share in
    // every series.
    var cdf = spec.kind === "cdf", line = spec.kind === "line" || cdf;
    var datasets = spec.datasets.map(function (ds) {
      var alpha = ds.alpha === undefined ? 1 : ds.alpha;
      var data = ds.points.map(function (p) {
        // Bars along y swap the axes: the value goes on x.
        return hbar ? { x: p.y, y: p.x, p: p.p, retained: p.retained } : p;
      });
      var out = { label: ds.label, data: data, borderColor: ds.colour, backgroundColor: rgba(ds.colour, alpha) };
      if (ds.bar_colours) {
        out.backgroundColor = ds.bar_colours.map(function (c) { return rgba(c, alpha); });
        out.borderColor = ds.bar_colours;
        out.borderWidth = alpha < 1 ? 1 : 0;
      }
      if (line) {
        out.borderWidth = 2.2;
        out.pointRadius = spec.time || cdf ? 0 : 4.5;
        out.pointHoverRadius = spec.time || cdf ? 3 : 6;
        out.pointHitRadius = 4;
        out.spanGaps = false;
        if (ds.dash) out.borderDash = ds.dash;
      }
      return out;
    });
    var config = {
      type: line ? "line" : "bar",
      data: { labels: spec.labels, datasets: datasets },
      plugins: spec.time ? [markers, dragZoom] : [markers],
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        indexAxis: hbar ? "y" : "x",
        parsing: hbar ? { xAxisKey: "x", yAxisKey: "y" } : undefined,
        events: ["mousemove", "mouseout", "click", "mousedown", "mouseup", "touchstart", "touchmove"],
        // A cdf's hover picks the share at the pointer's height: every run's value there.
        interaction: spec.time ? { mode: "nearest", axis: "x", intersect: false }
                   : { mode: "index", axis: cdf ? "y" : "x", intersect: false },
        layout: { padding: { top: 6 } },
        scales: { x: axisOptions(spec.x, spec), y: axisOptions(spec.y, spec) },
        plugins: {
          title: { display: !!spec.title, text: spec.title, color: spec.title_colour || "#212529", font: { size: 13, weight: "bold" } },
          legend: { labels: { boxWidth: 22, usePointStyle: false } },
          tooltip: {
            filter: function (item) { return !item.raw.end && item.raw.p !== undefined; },
            callbacks: {
              title: function (items) {
                if (!items.length) return "";
                var raw = items[0].raw;
                if (spec.time) return "t = " + secs(raw.x) + (raw.t1 !== undefined && raw.t1 !== null ? " to " + secs(raw.t1) : "");
                if (cdf) {
                  var pct = +(raw.y * 100).toFixed(3);
                  return "p" + pct + (pct === 0 ? " (min)" : pct === 100 ? " (max)" : "");
                }
                return items[0].label;
              },
              label: function (item) {
                var v = hbar || cdf ? item.parsed.x : item.parsed.y;
                var s = item.dataset.label + ": " + fmt(v) + " " + spec.unit;
                if (item.raw.retained !== undefined) s += " (retained " + fmt(item.raw.retained * 100) + "%)";
                return s;
              }
            }
          }
        }
      }
    };
    // Bars coloured per run: the legend shows the series (grey, by opacity).
    if (!line)
      config.options.plugins.legend.labels.generateLabels = function (chart) {
        return chart.data.datasets.map(function (ds, i) {
          var alpha = spec.datasets[i].alpha === undefined ? 1 : spec.datasets[i].alpha;
          return { text: ds.label, fillStyle: rgba("#495057", alpha), strokeStyle: "#495057", lineWidth: 1,
                   hidden: !chart.isDatasetVisible(i), datasetIndex: i };
        });
      };
    canvas.$spec = spec;  // for the plugins, which run from the first draw in the constructor
    var chart = new Chart(canvas, config);
    if (spec.time) {
      timeCharts.push(chart);
      if (!full) full = [spec.x.min, spec.x.max];
    }
  });

  if (full) {
    setRange(full[0], full[1]);
    document.querySelectorAll(".zoom-reset").forEach(function (b) {
      b.addEventListener("click", function () { setRange(full[0], full[1]); });
    });
    document.querySelectorAll(".zoom").forEach(function (z) {
      var from = z.querySelector(".zoom-from"), to = z.querySelector(".zoom-to");
      function apply() { setRange(parseFloat(from.value), parseFloat(to.value)); }
      from.addEventListener("change", apply);
      to.addEventListener("change", apply);
    });
    timeCharts.forEach(function (c) { c.canvas.addEventListener("dblclick", function () { setRange(full[0], full[1]); }); });
  }
})();
