// Draws every [data-chart] element from the JSON script its value names (a figure dict built in
// dashboard/charts.py), on page load and again after every htmx swap.
(function () {
  "use strict";

  function draw(root) {
    if (typeof Plotly === "undefined") { return; }
    root.querySelectorAll("[data-chart]").forEach(function (element) {
      if (element.dataset.drawn === "yes") { return; }
      var source = document.getElementById(element.dataset.chart);
      if (!source) { return; }
      var figure = JSON.parse(source.textContent);
      Plotly.newPlot(element, figure.data, figure.layout, { displaylogo: false, responsive: true });
      element.dataset.drawn = "yes";
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  // An outerHTML swap settles on a node that may have left the page, so look at the whole document.
  document.body.addEventListener("htmx:afterSettle", function () { draw(document); });
}());
