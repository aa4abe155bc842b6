// The dashboard's pages are rendered by the server; this script draws their plots with
// Chart.js from /api/range/* and, every data-refresh milliseconds, replaces the page's live
// part (#live) with a fresh copy and redraws the plots. After drawing, each canvas carries
// data-points (how many points it shows) and data-state (drawn or error), which tests read.
"use strict";

const colours = ["#2b6cb0", "#c05621", "#2f855a", "#9b2c2c", "#6b46c1", "#b7791f", "#2c7a7b", "#97266d"];
const charts = new Map();

function formatValue(unit, v) {
  switch (unit) {
    case "ratio": return (v * 100).toFixed(0) + "%";
    case "bytes": {
      const units = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return v.toFixed(i ? 1 : 0) + " " + units[i];
    }
    case "cores": return v < 1 ? (v * 1000).toFixed(0) + "m" : v.toFixed(2);
    default: return Math.round(v * 100) / 100 + "";
  }
}

function clock(ms) {
  return new Date(ms).toISOString().substring(11, 16);
}

async function draw(canvas) {
  let answer;
  try {
    const resp = await fetch(canvas.dataset.plot, { cache: "no-store" });
    answer = await resp.json();
    if (!resp.ok) throw new Error(answer.error || resp.statusText);
  } catch (err) {
    canvas.dataset.state = "error";
    canvas.dataset.error = String(err.message || err);
    canvas.closest("figure").dataset.error = canvas.dataset.error;
    return;
  }
  const datasets = answer.series.map((s, i) => ({
    label: s.label,
    yAxisID: s.axis,
    data: s.points.map(p => ({ x: p[0], y: p[1] })),
    borderColor: colours[i % colours.length],
    backgroundColor: colours[i % colours.length],
    borderWidth: 1.5,
    // Lines without dots, except where too few points make no line.
    pointRadius: s.points.length < 3 ? 3 : 0,
    stepped: s.axis === "y1",
  }));
  const scales = {
    x: { type: "linear", min: answer.start, max: answer.end, ticks: { callback: clock, maxTicksLimit: 8 } },
    y: { beginAtZero: true, ticks: { callback: v => formatValue(answer.unit, v) } },
  };
  if (answer.unit1) {
    scales.y1 = { position: "right", beginAtZero: true, grace: 1, grid: { drawOnChartArea: false }, ticks: { precision: 0 } };
  }
  let chart = charts.get(canvas);
  if (chart) {
    chart.data.datasets = datasets;
    chart.options.scales.x.min = answer.start;
    chart.options.scales.x.max = answer.end;
    chart.update("none");
  } else {
    chart = new Chart(canvas, {
      type: "line",
      data: { datasets },
      options: {
        animation: false,
        parsing: false,
        normalized: true,
        maintainAspectRatio: false,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales,
        plugins: {
          title: { display: true, text: answer.title + " · last 15 minutes" },
          tooltip: { callbacks: { title: items => items.length ? new Date(items[0].parsed.x).toISOString().substring(11, 19) : "" } },
        },
      },
    });
    charts.set(canvas, chart);
  }
  canvas.dataset.points = datasets.reduce((n, d) => n + d.data.length, 0);
  canvas.dataset.series = datasets.length;
  canvas.dataset.state = "drawn";
  delete canvas.dataset.error;
}

// The log's newest lines are at its end.
function scrollLog() {
  const log = document.getElementById("log");
  if (log) log.scrollTop = log.scrollHeight;
}

function drawAll() {
  return Promise.all(Array.from(document.querySelectorAll("canvas[data-plot]"), draw));
}

async function refresh() {
  try {
    const resp = await fetch(location.href, { cache: "no-store" });
    if (resp.ok) {
      const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
      for (const id of ["live", "updated"]) {
        const fresh = doc.getElementById(id), old = document.getElementById(id);
        if (fresh && old) old.replaceWith(fresh);
      }
    }
  } catch (err) {
    // A missed refresh is retried at the next tick; the page keeps what it shows.
  }
  scrollLog();
  await drawAll();
}

if (typeof Chart === "undefined") {
  document.body.dataset.chart = "missing";
} else {
  scrollLog();
  drawAll();
  const every = Number(document.body.dataset.refresh) || 5000;
  let busy = false;
  setInterval(async () => {
    if (busy || document.hidden) return;
    busy = true;
    try { await refresh(); } finally { busy = false; }
  }, every);
}
