// Draws every [data-chart] element from the JSON script its value names (a figure dict built in
// dashboard/web/charts.py), on page load and again after every htmx swap.
(function () {
  "use strict";

  function draw(root) {
    if (!window.CachescopeCharts) { return; }
    root.querySelectorAll("[data-chart]").forEach(function (element) {
      var source = document.getElementById(element.dataset.chart);
      if (!source || element.dataset.drawn) { return; }
      window.CachescopeCharts.draw(element, JSON.parse(source.textContent));
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  // An outerHTML swap settles on a node that may have left the page, so look at the whole document.
  document.body.addEventListener("htmx:afterSettle", function () { draw(document); });
}());
