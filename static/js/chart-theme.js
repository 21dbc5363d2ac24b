// What every chart shares: plotly's options, colours read from the page's CSS variables (so a chart
// follows the light or dark theme the system asks for), and loading plotly.js and drawing a chart
// only once it nears the screen. charts.js and cache-charts.js call CachescopeCharts.draw for each
// chart element.
(function () {
  "use strict";

  // No toolbar: plotly's modebar floats over the chart's title and legend. Dragging still zooms and
  // a double click resets.
  var CONFIG = { displaylogo: false, displayModeBar: false, responsive: true };
  var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  // Only the keys plotly would otherwise draw in its light defaults; a figure's own colours for its
  // traces stay as dashboard/web/charts.py chose them.
  function themed(layout) {
    var ink = cssVar("--ink"), muted = cssVar("--muted"), line = cssVar("--line"), card = cssVar("--card");
    var out = Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: Object.assign({}, layout.font, { color: ink }),
      hoverlabel: Object.assign({ bgcolor: card, bordercolor: line, font: { color: ink } }, layout.hoverlabel),
    });
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) {
        out[key] = Object.assign({ gridcolor: line, zerolinecolor: line, linecolor: muted }, layout[key]);
      }
    });
    if (layout.annotations) {
      out.annotations = layout.annotations.map(function (note) {
        return note.bgcolor ? Object.assign({}, note, { bgcolor: card }) : note;
      });
    }
    if (layout.legend && layout.legend.orientation === "h") {
      // Its entries stack on a narrow chart and would climb into the x axis title.
      out.legend = Object.assign({}, layout.legend, { y: -0.3, yanchor: "top" });
    }
    if (layout.updatemenus) {
      out.updatemenus = layout.updatemenus.map(function (menu) {
        return Object.assign({ bgcolor: card, activecolor: cssVar("--badge"), bordercolor: line, font: { color: ink } }, menu);
      });
    }
    return out;
  }

  // dashboard/web/charts.py draws predicted lines, the context window and markers in the light theme's
  // ink; they take the current theme's text colour instead, or they vanish on a dark background.
  var FIGURE_INK = "#17212e";

  function inked(value, ink) {
    if (typeof value === "string") { return value.toLowerCase() === FIGURE_INK ? ink : value; }
    if (Array.isArray(value)) { return value.map(function (item) { return inked(item, ink); }); }
    if (value && typeof value === "object") {
      var out = {};
      Object.keys(value).forEach(function (key) { out[key] = inked(value[key], ink); });
      return out;
    }
    return value;
  }

  // plotly.js (1.2 MB, a second of parsing on a busy machine) loads only once a chart nears the
  // screen, so a page's text is read before it and a page with no chart in view never loads it.
  // base.html names the bundle on this script's tag.
  var PLOTLY_URL = document.currentScript && document.currentScript.dataset.plotly;
  var plotlyReady = null;

  function loadPlotly() {
    if (!plotlyReady) {
      plotlyReady = new Promise(function (resolve, reject) {
        if (window.Plotly) { resolve(); return; }
        // A page may still include the bundle itself; then wait for that copy.
        var script = document.querySelector("script[src*='/plotly']");
        if (!script) {
          script = document.createElement("script");
          script.src = PLOTLY_URL;
          document.head.appendChild(script);
        }
        script.addEventListener("load", function () { resolve(); });
        script.addEventListener("error", function () { reject(new Error("plotly.js did not load from " + script.src)); });
      });
    }
    return plotlyReady;
  }

  var pending = [];
  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) { return; }
      observer.unobserve(entry.target);
      var index = pending.findIndex(function (item) { return item.element === entry.target; });
      if (index >= 0) { pending.splice(index, 1)[0].plot(); }
    });
  }, { rootMargin: "600px 0px" }) : null;

  // On a phone-wide chart a centred title runs under the buttons at the top right, and a long note
  // runs off the plot: the title moves left, the buttons sit just above the plot, and the notes break
  // at their dash in a smaller font.
  function narrowed(layout, width) {
    if (width >= 600) { return layout; }
    var out = Object.assign({}, layout);
    var title = typeof layout.title === "string" ? { text: layout.title } : layout.title;
    if (title) { out.title = Object.assign({}, title, { x: 0.02, xanchor: "left" }); }
    if (layout.legend && layout.legend.orientation === "h") {
      // Its entries stack on a narrow chart and would climb into the x axis title.
      out.legend = Object.assign({}, layout.legend, { y: -0.3, yanchor: "top" });
    }
    if (layout.updatemenus) {
      out.updatemenus = layout.updatemenus.map(function (menu) {
        return Object.assign({}, menu, { y: 1.01, yanchor: "bottom" });
      });
    }
    if (layout.annotations) {
      out.annotations = layout.annotations.map(function (note) {
        var text = typeof note.text === "string" ? note.text.replace(" — ", "<br>") : note.text;
        return Object.assign({}, note, { text: text, font: Object.assign({}, note.font, { size: 10 }) });
      });
    }
    return out;
  }

  // Paints a figure in the current theme's colours: a first draw, or a redraw when the theme changes.
  function paint(element, figure) {
    var ink = cssVar("--ink");
    var data = (figure.data || []).map(function (trace) { return inked(trace, ink); });
    var layout = narrowed(inked(figure.layout || {}, ink), element.clientWidth);
    return Plotly.react(element, data, themed(layout), CONFIG);
  }

  // Draws the figure into element now if it is on or near the screen, otherwise when it comes near;
  // then() runs after it is drawn (for click handlers).
  function draw(element, figure, then) {
    if (element.dataset.drawn) { return; }
    element.dataset.drawn = "pending";
    var plot = function () {
      loadPlotly().then(function () { return paint(element, figure); }).then(function () {
        element.dataset.drawn = "yes";
        element.cachescopeFigure = figure;
        if (then) { then(element); }
      });
    };
    if (!observer) { plot(); return; }
    pending.push({ element: element, plot: plot });
    observer.observe(element);
  }

  // A change of the system's theme recolours the charts already drawn.
  if (dark && dark.addEventListener) {
    dark.addEventListener("change", function () {
      document.querySelectorAll(".js-plotly-plot").forEach(function (element) {
        if (element.cachescopeFigure && window.Plotly) { paint(element, element.cachescopeFigure); }
      });
    });
  }

  window.CachescopeCharts = { config: CONFIG, themed: themed, draw: draw };
}());
