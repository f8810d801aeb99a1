#include "report/svg_axis.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/number_format.h"
#include "report/svg_doc.h"

namespace kvaudit::report {
namespace {

// 10^e, exactly for |e| <= 22 (the powers of ten a double holds exactly), so m * 10^e and
// m / 10^-e are correctly rounded; beyond that std::pow, which also reaches the subnormals.
double Pow10(int e) {
  if (std::abs(e) > 22) return std::pow(10.0, e);
  double p = 1;
  for (int i = 0; i < std::abs(e); ++i) p *= 10;
  return e < 0 ? 1 / p : p;
}

// hi - lo, at most DBL_MAX: the span of [-1e308, 1e308] overflows.
double Span(double lo, double hi) { return std::min(hi - lo, std::numeric_limits<double>::max()); }

// A 1-2-5 step: m in {1, 2, 5} times 10^e.
struct Step {
  int m = 1, e = 0;
  double value() const { return e < 0 ? m / Pow10(-e) : m * Pow10(e); }
  // The i-th multiple, the double nearest the decimal number i * m * 10^e.
  double At(long i) const {
    return e < 0 ? static_cast<double>(i * m) / Pow10(-e) : static_cast<double>(i * m) * Pow10(e);
  }
};

Step NiceStep(double span, int target) {
  const double raw = span / std::max(target, 1);
  if (!(raw > 0) || !std::isfinite(raw)) return {1, 0};  // log10 of 0 or inf has no integer floor
  int e = static_cast<int>(std::floor(std::log10(raw)));
  const double norm = raw / Pow10(e);
  int m = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  if (m == 10) m = 1, ++e;
  return {m, std::clamp(e, -300, 300)};
}

// The range of multiples of step inside [lo, hi], with a tolerance of 1e-9 steps for rounding.
std::pair<long, long> MultiplesInside(double lo, double hi, double step) {
  return {static_cast<long>(std::ceil(lo / step - 1e-9)), static_cast<long>(std::floor(hi / step + 1e-9))};
}

// Every power base^e (e integer) inside [lo, hi]; every k-th when more than max_ticks.
std::vector<double> Powers(double base, double lo, double hi, int max_ticks) {
  const double lb = std::log(base);
  const long e0 = static_cast<long>(std::ceil(std::log(lo) / lb - 1e-9));
  const long e1 = static_cast<long>(std::floor(std::log(hi) / lb + 1e-9));
  if (e1 < e0) return {};
  const long count = e1 - e0 + 1;
  const long k = (count + max_ticks - 1) / std::max(max_ticks, 1);
  std::vector<double> out;
  for (long e = e0; e <= e1; ++e) {
    if (e % k != 0) continue;
    // Exact: integral powers of 2 are exact by ldexp, of 10 by Pow10 for |e| <= 22.
    out.push_back(base == 2 ? std::ldexp(1.0, static_cast<int>(e)) : Pow10(static_cast<int>(e)));
  }
  return out;
}

std::vector<Tick> Labelled(ScaleKind kind, const std::vector<double>& values) {
  std::vector<Tick> out;
  for (double v : values) out.push_back({v, TickLabel(kind, v)});
  return out;
}

}  // namespace

double Scale::Map(double v) const {
  double f = 0;
  // Halves and logs, not v - lo and v / lo: neither overflows for any finite domain.
  if (kind == ScaleKind::kLinear) {
    f = (v / 2 - lo / 2) / (hi / 2 - lo / 2);
  } else {
    if (!(v > 0)) return px_lo;
    f = (std::log(v) - std::log(lo)) / (std::log(hi) - std::log(lo));
  }
  return px_lo + f * (px_hi - px_lo);
}

std::vector<double> LinearTicks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo)) return {};
  const Step step = NiceStep(Span(lo, hi), target);
  const auto [i0, i1] = MultiplesInside(lo, hi, step.value());
  std::vector<double> out;
  for (long i = i0; i <= i1; ++i) out.push_back(step.At(i) == 0 ? 0.0 : step.At(i));
  return out;
}

std::vector<double> Log2Ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !std::isfinite(hi) || hi < 2 * lo) return {};
  return Powers(2, lo, hi, max_ticks);
}

std::vector<double> Log10Ticks(double lo, double hi, int max_ticks) {
  if (!(lo > 0) || !std::isfinite(hi) || !(hi > lo)) return {};
  std::vector<double> out = Powers(10, lo, hi, max_ticks);
  if (out.size() >= 2) return out;
  out.clear();
  const int e0 = static_cast<int>(std::floor(std::log10(lo))), e1 = static_cast<int>(std::ceil(std::log10(hi)));
  for (int e = e0; e <= e1; ++e) {
    for (int m : {1, 2, 5}) {
      const double v = e < 0 ? m / Pow10(-e) : m * Pow10(e);
      if (v >= lo * (1 - 1e-12) && v <= hi * (1 + 1e-12)) out.push_back(v);
    }
  }
  return out;
}

std::vector<Tick> AxisTicks(ScaleKind kind, double lo, double hi, int target) {
  if (kind == ScaleKind::kLog2 && hi >= 4 * lo) return Labelled(kind, Log2Ticks(lo, hi, 2 * target));
  if (kind == ScaleKind::kLog10) {
    std::vector<double> decades = Log10Ticks(lo, hi, 2 * target);
    if (decades.size() >= 2) return Labelled(kind, decades);
  }
  return Labelled(kind, LinearTicks(lo, hi, target));
}

std::string TickLabel(ScaleKind kind, double v) {
  if (kind == ScaleKind::kLog2 && v >= 1 && v < 1e15 && v == std::floor(v)) return FormatContext(static_cast<long>(v));
  return FormatSig(v, 6);
}

Domain NiceDomain(ScaleKind kind, double lo, double hi, bool include_zero) {
  if (kind != ScaleKind::kLinear) {
    // Padded in log space and kept inside the positive doubles, so extreme ranges stay finite.
    const double l0 = std::log(lo), l1 = std::log(hi);
    const double pad = hi <= lo ? (kind == ScaleKind::kLog2 ? std::log(2.0) : std::log(10.0) / 2) : 0.04 * (l1 - l0);
    return {std::max(std::exp(l0 - pad), std::numeric_limits<double>::denorm_min()),
            std::min(std::exp(l1 + pad), std::numeric_limits<double>::max())};
  }
  if (include_zero) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
  if (hi <= lo) {
    const double half = lo == 0 ? 1 : std::fabs(lo) / 2;
    lo -= half, hi += half;
  }
  const Step step = NiceStep(Span(lo, hi), 5);
  const double v = step.value(), big = std::numeric_limits<double>::max();
  return {std::max(step.At(static_cast<long>(std::floor(lo / v + 1e-9))), -big),
          std::min(step.At(static_cast<long>(std::ceil(hi / v - 1e-9))), big)};
}

double MaxTickWidth(const std::vector<Tick>& ticks) {
  double w = 0;
  for (const Tick& t : ticks) w = std::max(w, TextWidth(t.label, kTickFont));
  return w;
}

std::string DrawXAxis(const Scale& x, const std::vector<Tick>& ticks, const PlotArea& area, const std::string& label) {
  const std::string stroke = " stroke=\"" + std::string(kInk) + "\"";
  std::string out = "<g class=\"axis x-axis\">\n";
  // Labels closer than their width plus a gap would overlap: show every k-th.
  size_t every = 1;
  if (ticks.size() >= 2) {
    const double spacing = std::fabs(x.Map(ticks[1].value) - x.Map(ticks[0].value));
    const double need = MaxTickWidth(ticks) + 8;
    if (spacing > 0 && spacing < need) every = static_cast<size_t>(std::ceil(need / spacing));
  }
  for (size_t i = 0; i < ticks.size(); ++i) {
    const double px = x.Map(ticks[i].value);
    out += Line(px, area.top, px, area.bottom(), " stroke=\"" + std::string(kGrid) + "\"");
    out += Line(px, area.bottom(), px, area.bottom() + 5, stroke);
    if (i % every == 0)
      out += Text(px, area.bottom() + 17, ticks[i].label, " text-anchor=\"middle\" fill=\"" + std::string(kInk) + "\"");
  }
  out += Line(area.left, area.bottom(), area.right(), area.bottom(), stroke);
  out +=
      Text(area.left + area.width / 2, area.bottom() + 36, label,
           " class=\"axis-label\" text-anchor=\"middle\" font-size=\"" + Px(kLabelFont) + "\" fill=\"" + kInk + "\"");
  return out + "</g>\n";
}

std::string DrawYAxis(const Scale& y, const std::vector<Tick>& ticks, const PlotArea& area, const std::string& label,
                      double label_x) {
  const std::string stroke = " stroke=\"" + std::string(kInk) + "\"";
  std::string out = "<g class=\"axis y-axis\">\n";
  for (const Tick& t : ticks) {
    const double py = y.Map(t.value);
    out += Line(area.left, py, area.right(), py, " stroke=\"" + std::string(kGrid) + "\"");
    out += Line(area.left - 5, py, area.left, py, stroke);
    out += Text(area.left - 8, py, t.label, " dy=\"0.32em\" text-anchor=\"end\" fill=\"" + std::string(kInk) + "\"");
  }
  out += Line(area.left, area.top, area.left, area.bottom(), stroke);
  const double cy = area.top + area.height / 2;
  out += Text(label_x, cy, label,
              " class=\"axis-label\" text-anchor=\"middle\" transform=\"rotate(-90 " + Px(label_x) + " " + Px(cy) +
                  ")\" font-size=\"" + Px(kLabelFont) + "\" fill=\"" + kInk + "\"");
  return out + "</g>\n";
}

}  // namespace kvaudit::report
