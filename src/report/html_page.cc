#include "report/html_page.h"

#include "report/html_escape.h"
#include "report/page_assets.h"
#include "report/sections.h"

namespace kvaudit::report {
namespace {

std::string Title(const ReportContext& ctx) {
  std::string models;
  for (const RunDirectory& d : ctx.dirs) {
    const ResultsFile* f = d.audit       ? &*d.audit
                           : d.eval      ? &*d.eval
                           : d.probe     ? &*d.probe
                           : d.recommend ? &*d.recommend
                                         : nullptr;
    const std::string m = f ? f->doc.value("model", std::string()) : std::string();
    if (!m.empty() && models.find(m) == std::string::npos) models += (models.empty() ? "" : ", ") + m;
  }
  return "kvaudit report" + (models.empty() ? std::string() : ": " + models);
}

std::string PartialBanner(const ReportContext& ctx) {
  std::string items;
  for (const RunDirectory& d : ctx.dirs) {
    for (const std::string& m : d.missing)
      items += "<li>" + (ctx.compare ? EscapeHtml(d.label) + ": " : "") + EscapeHtml(m) + "</li>";
  }
  if (items.empty()) return "";
  return "<aside class=\"partial\" id=\"partial\"><b>Not everything is here.</b><ul>" + items + "</ul></aside>\n";
}

std::string Toggles(const ReportContext& ctx) {
  if (ctx.eval_configs.empty()) return "";
  std::string out = "<nav class=\"toggles\" aria-label=\"configurations\">Configurations: ";
  for (const ConfigView& c : ctx.eval_configs) {
    out += "<label><input type=\"checkbox\" checked data-toggle=\"" + EscapeHtml(c.name) + "\"><span class=\"swatch c" +
           std::to_string(c.color % 8) + "\"></span>" + EscapeHtml(c.name) + "</label> ";
  }
  return out + "</nav>\n";
}

// The page's sections in the order it shows them; a section's number is its place here.
constexpr const Section* kPageSections[] = {&kVerdictSection,    &kMemorySection,      &kCurvesSection,
                                            &kAttentionSection,  &kSensitivitySection, &kProbesSection,
                                            &kWorstCasesSection, &kRunInfoSection};

std::string TableOfContents() {
  std::string out = "<nav class=\"toc\" aria-label=\"sections\">";
  int number = 0;
  for (const Section* s : kPageSections) {
    ++number;
    out += std::string(number == 1 ? "" : " ") + "<a href=\"#" + s->id + "\">" + std::to_string(number) + " " +
           s->toc_label + "</a>";
  }
  return out + "</nav>\n";
}

std::string RenderSections(const ReportContext& ctx) {
  std::string out;
  int number = 0;
  for (const Section* s : kPageSections) {
    out += std::string("<section id=\"") + s->id + "\"><h2>" + std::to_string(++number) + ". " + EscapeHtml(s->title) +
           "</h2>\n<p class=\"intro\">" + EscapeHtml(s->how_to_read) + "</p>\n" + s->body(ctx) + "</section>\n";
  }
  return out;
}

}  // namespace

std::string RenderHtmlPage(const ReportContext& ctx) {
  const std::string title = Title(ctx);
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"kvaudit report\">\n<title>" +
      EscapeHtml(title) + "</title>\n<style>\n" + PageCss() + "</style>\n</head>\n<body>\n<header><h1>" +
      EscapeHtml(title) + "</h1>\n" + TableOfContents() + Toggles(ctx) + "</header>\n<main>\n" + PartialBanner(ctx);
  page += RenderSections(ctx);
  page +=
      "</main>\n<footer>Written by kvaudit report from results.json files; every tagged number carries its "
      "source as data-src (directory | file | JSON pointer).</footer>\n<script>\n";
  page += PageScript();
  return page + "</script>\n</body>\n</html>\n";
}

}  // namespace kvaudit::report
