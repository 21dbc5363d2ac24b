// Draws every [data-cache-chart] element from the JSON script it names, and opens a request's
// page when one of its bars or points is clicked (the URL travels as the point's customdata).
(function () {
  "use strict";

  function draw(root) {
    if (typeof Plotly === "undefined") { return; }
    root.querySelectorAll("[data-cache-chart]").forEach(function (element) {
      if (element.dataset.drawn === "yes") { return; }
      var source = document.getElementById(element.dataset.cacheChart);
      if (!source) { return; }
      var figure = JSON.parse(source.textContent);
      Plotly.newPlot(element, figure.data, figure.layout, { displaylogo: false, responsive: true });
      element.dataset.drawn = "yes";
      element.on("plotly_click", function (event) {
        var point = event.points && event.points[0];
        var url = point && point.customdata;
        if (typeof url === "string" && url.charAt(0) === "/") { window.location.assign(url); }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  // An outerHTML swap settles on a node that may have left the page, so look at the whole document.
  document.body.addEventListener("htmx:afterSettle", function () { draw(document); });
}());
