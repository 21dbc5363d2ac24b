// Draws every [data-cache-chart] element from the JSON script it names, and opens a request's
// page when one of its bars or points is clicked (the URL travels as the point's customdata).
(function () {
  "use strict";

  function openClickedRequest(element) {
    element.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      var url = point && point.customdata;
      if (typeof url === "string" && url.charAt(0) === "/") { window.location.assign(url); }
    });
  }

  function draw(root) {
    if (!window.CachescopeCharts) { return; }
    root.querySelectorAll("[data-cache-chart]").forEach(function (element) {
      var source = document.getElementById(element.dataset.cacheChart);
      if (!source || element.dataset.drawn) { return; }
      window.CachescopeCharts.draw(element, JSON.parse(source.textContent), openClickedRequest);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  // An outerHTML swap settles on a node that may have left the page, so look at the whole document.
  document.body.addEventListener("htmx:afterSettle", function () { draw(document); });
}());
