#include "report/page_assets.h"

#include "report/palette.h"

namespace kvaudit::report {

std::string PageCss() {
  std::string css = R"CSS(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0; color: #1a1a1a;
       background: #fff; line-height: 1.45; }
header { padding: 0.8rem 1.5rem; border-bottom: 1px solid #ccc; background: #f6f6f6; }
h1 { font-size: 1.4rem; margin: 0 0 0.4rem; }
h2 { font-size: 1.2rem; border-bottom: 2px solid #333; padding-bottom: 0.2rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; }
h4 { font-size: 0.95rem; margin: 0.8rem 0 0.3rem; }
main { padding: 0 1.5rem 2rem; max-width: 1400px; }
nav.toc a { margin-right: 0.8rem; }
nav.toggles { margin-top: 0.4rem; font-size: 0.9rem; }
nav.toggles label { margin-right: 0.8rem; white-space: nowrap; cursor: pointer; }
.intro { color: #444; max-width: 60rem; }
.note { color: #444; font-size: 0.9rem; }
.missing { color: #7a4a00; background: #fff4e0; padding: 0.3rem 0.6rem; border-left: 3px solid #e69f00; }
aside.partial { background: #fff4e0; border: 1px solid #e69f00; padding: 0.5rem 1rem; margin-top: 1rem; }
table { border-collapse: collapse; margin: 0.4rem 0 0.8rem; font-size: 0.88rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: #eee; }
table.sortable thead th { cursor: pointer; }
table.sortable thead th[aria-sort="ascending"]::after { content: " ▲"; }
table.sortable thead th[aria-sort="descending"]::after { content: " ▼"; }
td .v { font-variant-numeric: tabular-nums; }
td.spec, td.spec .v { white-space: nowrap; }
.pass { color: #006d2c; font-weight: 600; }
.fail { color: #b30000; font-weight: 600; }
.warn { color: #8a5a00; margin: 0.2em 0; }
.inconclusive { color: #a65f00; font-weight: 600; }
.headline { font-size: 1.05rem; }
.recommended code { font-size: 1rem; font-weight: 600; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 0.85rem; }
pre.copy { background: #f4f4f4; padding: 0.3rem; position: relative; }
button.copy { font-size: 0.75rem; margin-left: 0.4rem; }
mark { background: #f0e442; color: #000; }
figure { margin: 0.6rem 0 1rem; break-inside: avoid; }
figcaption { font-size: 0.85rem; color: #444; }
svg { max-width: 100%; height: auto; }
.heatmaps, .grids { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-start; }
.heatmaps figure, .grids figure { margin: 0; }
table.grid td { text-align: center; min-width: 2.6rem; font-variant-numeric: tabular-nums; }
table.grid td.na { background: #eee; color: #888; }
table.grid caption { font-weight: 600; text-align: left; }
table.sxs td { width: 33%; }
.case { margin-bottom: 1rem; }
table.meta th { background: #eee; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.3em; border: 1px solid #555; vertical-align: -0.05em; }
.hidden-config { display: none !important; }
footer { font-size: 0.8rem; color: #666; padding: 1rem 1.5rem; border-top: 1px solid #ccc; }
@media print {
  header nav.toggles, button.copy { display: none; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  tr, .case { break-inside: avoid; }
  td { overflow-wrap: anywhere; }  /* a long spec or case text wraps instead of widening the page */
  a { color: inherit; text-decoration: none; }
}
)CSS";
  for (int i = 0; i < 8; ++i) css += ".swatch.c" + std::to_string(i) + " { background: " + SeriesColor(i) + "; }\n";
  return css;
}

std::string PageScript() {
  return R"JS(
"use strict";
(function () {
  // Sortable tables: click a header; cells sort by data-sort, numerically when both parse.
  function sortKey(cell) { return cell ? (cell.getAttribute("data-sort") ?? cell.textContent) : ""; }
  function compare(a, b) {
    const x = parseFloat(a), y = parseFloat(b);
    if (!isNaN(x) && !isNaN(y) && String(x) !== "NaN") return x - y;
    if (a === "" && b !== "") return 1;
    if (b === "" && a !== "") return -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    const heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        const asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        const body = table.tBodies[0];
        const rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          const c = compare(sortKey(r1.cells[col]), sortKey(r2.cells[col]));
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  // Configuration toggles: hide a configuration's lines, rows and maps everywhere.
  document.querySelectorAll("input[data-toggle]").forEach(function (box) {
    box.addEventListener("change", function () {
      const name = box.getAttribute("data-toggle");
      document.querySelectorAll("[data-series], [data-config]").forEach(function (el) {
        const of = el.getAttribute("data-series") ?? el.getAttribute("data-config");
        if (of === name) el.classList.toggle("hidden-config", !box.checked);
      });
    });
  });
  // Copy buttons beside engine settings: select the text, copy where the browser allows it.
  document.querySelectorAll("pre.copy").forEach(function (pre) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "copy";
    button.addEventListener("click", function () {
      const range = document.createRange();
      range.selectNodeContents(pre.querySelector("code") || pre);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { document.execCommand("copy"); button.textContent = "copied"; } catch (e) { button.textContent = "selected"; }
    });
    pre.parentNode.insertBefore(button, pre.nextSibling);
  });
})();
)JS";
}

}  // namespace kvaudit::report
