// What the report's SVG tests read back: the chart parsed as XML (tinyxml2), its elements by tag
// and attribute, a marker's <title>, and the checks every chart must pass (self-contained,
// accessible, scalable).
#pragma once

#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace kvaudit::report::testing {

using Element = tinyxml2::XMLElement;

// e and everything under it, in document order (not e's siblings).
inline void Walk(const Element* e, const std::function<void(const Element*)>& f) {
  f(e);
  for (const Element* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) Walk(c, f);
}

// Every element under root (root included) with this tag (nullptr: any) carrying attr (nullptr:
// any), in document order.
inline std::vector<const Element*> All(const Element* root, const char* tag, const char* attr = nullptr) {
  std::vector<const Element*> out;
  Walk(root, [&](const Element* e) {
    if ((!tag || std::string(e->Name()) == tag) && (!attr || e->Attribute(attr))) out.push_back(e);
  });
  return out;
}

inline std::string AttrOf(const Element* e, const char* name) {
  const char* v = e->Attribute(name);
  return v ? v : "";
}

inline double NumberAttr(const Element* e, const char* name) { return std::strtod(AttrOf(e, name).c_str(), nullptr); }

inline std::string TitleOf(const Element* e) {
  const Element* t = e->FirstChildElement("title");
  return t && t->GetText() ? t->GetText() : "";
}

inline std::vector<std::string> Texts(const Element* root) {
  std::vector<std::string> out;
  for (const Element* t : All(root, "text")) out.push_back(t->GetText() ? t->GetText() : "");
  return out;
}

inline bool HasText(const Element* root, const std::string& s) {
  for (const std::string& t : Texts(root)) {
    if (t.find(s) != std::string::npos) return true;
  }
  return false;
}

// Parses svg into doc and checks what every chart promises: one <svg> root with a viewBox,
// width="100%", role="img" and an aria-label; system fonts; no reference outside the page.
inline const Element* ParseChart(const std::string& svg, tinyxml2::XMLDocument* doc) {
  EXPECT_EQ(doc->Parse(svg.c_str(), svg.size()), tinyxml2::XML_SUCCESS) << doc->ErrorStr() << "\n" << svg;
  const Element* root = doc->FirstChildElement("svg");
  EXPECT_NE(root, nullptr) << svg;
  if (!root) return nullptr;
  EXPECT_EQ(root->NextSiblingElement(), nullptr);
  EXPECT_EQ(AttrOf(root, "viewBox").rfind("0 0 ", 0), 0u);
  EXPECT_EQ(AttrOf(root, "width"), "100%");
  EXPECT_EQ(AttrOf(root, "role"), "img");
  EXPECT_FALSE(AttrOf(root, "aria-label").empty());
  EXPECT_EQ(AttrOf(root, "font-family"), "system-ui, sans-serif");
  for (const char* banned : {"http", "href", "xlink", "@import", "<script", "<image", "<use"}) {
    EXPECT_EQ(svg.find(banned), std::string::npos) << banned << " in\n" << svg;
  }
  return root;
}

}  // namespace kvaudit::report::testing
