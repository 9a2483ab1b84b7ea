// Steady Queue dashboard: the few behaviours that need a script. Everything works without it.
(function () {
  "use strict";
  var KEY = "steady-queue-dashboard-live";

  // Live updates: polled regions use hx-trigger="every Ns [sqLive()]"; the switch pauses them.
  window.sqLive = function () {
    var box = document.getElementById("sq-live");
    return !box || box.checked;
  };

  function setUpLiveToggle() {
    var box = document.getElementById("sq-live");
    if (!box) return;
    box.checked = localStorage.getItem(KEY) !== "paused";
    box.addEventListener("change", function () {
      localStorage.setItem(KEY, box.checked ? "live" : "paused");
    });
    box.closest("label").hidden = false;
  }

  // "Select all" checkboxes tick every row checkbox of their table.
  document.addEventListener("change", function (event) {
    var all = event.target.closest("[data-select-all]");
    if (!all) return;
    all.closest("table").querySelectorAll("input[name=ids]").forEach(function (box) {
      box.checked = all.checked;
    });
  });

  // "Go back, change nothing" on a question shown above the page (htmx): take the question
  // away and leave the page as it was, its ticked rows still ticked. On a page of its own
  // (no script, or a reload) the link leads back to the list instead.
  document.addEventListener("click", function (event) {
    var link = event.target.closest("[data-sq-dismiss]");
    var area = link && link.closest("#sq-messages");
    if (!area) return;
    event.preventDefault();
    area.replaceChildren();
  });

  // Filter forms come open (without a script they stay so); at phone width they fold
  // behind their "Filters" button so the list comes first, unless they hold an error.
  // The width is the stylesheet's narrow breakpoint; on wider screens the button is hidden.
  var narrow = window.matchMedia("(max-width: 720px)");
  function fitFilters() {
    document.querySelectorAll("details[data-collapse-narrow]").forEach(function (box) {
      box.open = !narrow.matches || box.hasAttribute("data-keep-open");
    });
  }
  narrow.addEventListener("change", fitFilters);

  document.addEventListener("DOMContentLoaded", setUpLiveToggle);
  document.addEventListener("DOMContentLoaded", fitFilters);
})();
