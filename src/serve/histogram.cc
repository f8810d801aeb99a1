#include "serve/histogram.h"

#include <cmath>
#include <cstdio>

namespace kvaudit::serve {

void MetricFamilyHeader(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double x) {
  size_t b = 0;
  while (b < bounds_.size() && x > bounds_[b]) ++b;  // le: the first bound >= x
  ++counts_[b];
  sum_ += x;
  ++count_;
}

std::string Histogram::Render(const std::string& name, const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  const std::string plain = labels.empty() ? "" : "{" + labels + "}";
  std::string out;
  int64_t cumulative = 0;
  for (size_t b = 0; b < bounds_.size(); ++b) {
    cumulative += counts_[b];
    out += name + "_bucket{" + labels + sep + "le=\"" + PromNumber(bounds_[b]) + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum" + plain + " " + PromNumber(sum_) + "\n";
  out += name + "_count" + plain + " " + std::to_string(count_) + "\n";
  return out;
}

std::string PromNumber(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", x);
  return buf;
}

}  // namespace kvaudit::serve
