// The SVG chart kit (report_svg.h): colours, tick selection, the SVG writer,
// axes, legends and fault-event annotations (full labels, or numbered markers
// and a key). Knows nothing about runs or reports.

#include "report_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report_internal.h"

namespace metaroce::scenario::report_internal {
namespace {

constexpr double kCharW = 0.6;      // DejaVu Sans average glyph width per font px
const char* kFont = "DejaVu Sans, Helvetica, Arial, sans-serif";

struct Rgb {
  double r, g, b;
};
Rgb parse_hex(const std::string& h) {
  auto v = [&](size_t i) { return static_cast<double>(std::stoi(h.substr(i, 2), nullptr, 16)); };
  return {v(1), v(3), v(5)};
}
std::string hex(const Rgb& c) {
  auto cl = [](double x) { return static_cast<int>(std::lround(std::clamp(x, 0.0, 255.0))); };
  return strf("#%02x%02x%02x", cl(c.r), cl(c.g), cl(c.b));
}
std::string mix(const std::string& a, const std::string& b, double t) {
  const Rgb x = parse_hex(a), y = parse_hex(b);
  return hex({x.r + (y.r - x.r) * t, x.g + (y.g - x.g) * t, x.b + (y.b - x.b) * t});
}

std::string event_text(const std::pair<double, std::string>& e) {
  return (e.second.empty() ? std::string("event") : e.second) + " (" + trim_num(e.first, 2) + " s)";
}

void marker(Svg& s, double cx, double bottom, const std::string& text) {
  const double w = std::max(14.0, text_w(text, 10) + 6);
  s.rect(cx - w / 2, bottom - 14, w, 14, "#495057", "rx=\"3\"");
  s.text(cx, bottom - 3.5, esc(text), "middle", 10, "#ffffff", "font-weight=\"bold\"");
}

}  // namespace

// Coordinates in SVG: one decimal, no "-0.0".
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = strf("%.1f", v);
  if (s == "-0.0") s = "0.0";
  if (ends_with(s, ".0")) s.resize(s.size() - 2);
  return s;
}

double text_w(std::string_view s, double size) { return static_cast<double>(s.size()) * size * kCharW; }

// Sequential scale for utilisation 0..1 (light grey -> yellow-green -> deep blue).
std::string util_colour(double u) {
  static const char* stops[] = {"#f1f3f5", "#d9f0a3", "#7fcdbb", "#2c7fb8", "#253494"};
  if (!std::isfinite(u)) u = 0;
  u = std::clamp(u, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(u));
  return mix(stops[i], stops[i + 1], u - i);
}

Ticks nice_ticks(double lo, double hi, int target) {
  Ticks t;
  if (!std::isfinite(lo)) lo = 0;
  if (!std::isfinite(hi) || hi <= lo) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  t.step = step;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  for (double x = t.lo; x <= t.hi + step * 1e-6; x += step) t.v.push_back(std::fabs(x) < step * 1e-9 ? 0 : x);
  t.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return t;
}

void Svg::line(double x1, double y1, double x2, double y2, const std::string& stroke, double sw,
               const std::string& dash) {
  o << "<line x1=\"" << px(x1) << "\" y1=\"" << px(y1) << "\" x2=\"" << px(x2) << "\" y2=\"" << px(y2)
    << "\" stroke=\"" << stroke << "\" stroke-width=\"" << sw << "\"";
  if (!dash.empty()) o << " stroke-dasharray=\"" << dash << "\"";
  o << "/>\n";
}

void Svg::rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra) {
  o << "<rect x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(0.0, w)) << "\" height=\""
    << px(std::max(0.0, h)) << "\" fill=\"" << fill << "\"" << (extra.empty() ? "" : " ") << extra << "/>\n";
}

// html = already escaped content (may hold <tspan>s).
void Svg::text(double x, double y, const std::string& html, const std::string& anchor, double size,
               const std::string& fill, const std::string& extra) {
  o << "<text x=\"" << px(x) << "\" y=\"" << px(y) << "\" font-size=\"" << size << "\" fill=\"" << fill << "\"";
  if (anchor != "start") o << " text-anchor=\"" << anchor << "\"";
  if (!extra.empty()) o << " " << extra;
  o << ">" << html << "</text>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double sw,
                   const std::string& dash) {
  o << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << sw
    << "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"";
  if (!dash.empty()) o << " stroke-dasharray=\"" << dash << "\"";
  o << " points=\"";
  for (size_t i = 0; i < pts.size(); ++i) o << (i ? " " : "") << px(pts[i].first) << "," << px(pts[i].second);
  o << "\"/>\n";
}

void Svg::circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke) {
  o << "<circle cx=\"" << px(cx) << "\" cy=\"" << px(cy) << "\" r=\"" << px(r) << "\" fill=\"" << fill
    << "\" stroke=\"" << stroke << "\" stroke-width=\"1.5\"/>\n";
}

std::string Svg::wrap(const std::string& id, double h, const std::string& label) const {
  std::ostringstream s;
  s << "<svg id=\"" << id << "\" role=\"img\" aria-label=\"" << esc(label) << "\" xmlns=\"http://www.w3.org/2000/svg\""
    << " viewBox=\"0 0 " << px(kW) << " " << px(h) << "\" width=\"" << px(kW) << "\" height=\"" << px(h)
    << "\" font-family=\"" << kFont << "\">\n"
    << "<title>" << esc(label) << "</title>\n"
    << o.str() << "</svg>\n";
  return s.str();
}

// Grid, axes, ticks and axis titles for a plot area.
void axes(Svg& s, const Area& a, const Linear& xs, const Ticks& xt, const std::string& xunit, const Linear& ys,
          const Ticks& yt, const std::string& yunit, const std::string& xtitle, const std::string& ytitle) {
  for (double v : yt.v) {
    const double y = ys(v);
    s.line(a.x, y, a.right(), y, "#e9ecef");
    s.line(a.x - 4, y, a.x, y, "#495057");
    s.text(a.x - 7, y + 4, esc(strf("%.*f", yt.decimals, v) + yunit), "end", 11, "#495057");
  }
  for (double v : xt.v) {
    const double x = xs(v);
    s.line(x, a.bottom(), x, a.bottom() + 4, "#495057");
    s.text(x, a.bottom() + 16, esc(strf("%.*f", xt.decimals, v) + xunit), "middle", 11, "#495057");
  }
  s.line(a.x, a.y, a.x, a.bottom(), "#495057");
  s.line(a.x, a.bottom(), a.right(), a.bottom(), "#495057");
  if (!xtitle.empty()) s.text(a.x + a.w / 2, a.bottom() + 32, esc(xtitle), "middle", 12, "#343a40");
  if (!ytitle.empty()) {
    const double cx = a.x - 44, cy = a.y + a.h / 2;
    s.text(cx, cy, esc(ytitle), "middle", 12, "#343a40",
           "transform=\"rotate(-90 " + px(cx) + " " + px(cy) + ")\"");
  }
}

// Horizontal legend, wrapping; returns the height used.
double legend(Svg& s, double x0, double y0, double width, const std::vector<LegendItem>& items) {
  double x = x0, y = y0 + 10;
  for (const auto& it : items) {
    const double w = 28 + text_w(it.label, 12) + 18;
    if (x + w > x0 + width && x > x0) {
      x = x0;
      y += 20;
    }
    if (it.kind == LegendItem::kLine) {
      s.line(x, y, x + 22, y, it.colour, 3, it.dash);
    } else {
      s.rect(x + 4, y - 6, 14, 12, it.colour, it.opacity < 1 ? "fill-opacity=\"" + px(it.opacity) + "\"" : "");
    }
    s.text(x + 28, y + 4, esc(it.label), "start", 12, "#343a40");
    x += w;
  }
  return y - y0 + 12;
}

// Full labels for evs in a; false if they need more than max_rows rows.
bool place_event_labels(const Area& a, const Linear& xs, const Events& evs, size_t max_rows,
                        std::vector<LabelPlace>* out) {
  std::vector<double> row_end;  // right edge of the last label in each row
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x < a.x - 0.5 || x > a.right() + 0.5) continue;
    const std::string text = event_text(e);
    const double w = text_w(text, 11) + 6;
    const double lx = x + 3 + w <= a.right() ? x + 3 : x - 3 - w;
    if (lx < a.x) return false;
    size_t row = 0;
    for (; row < row_end.size(); ++row)
      if (lx > row_end[row] + 4) break;
    if (row >= max_rows) return false;
    if (row == row_end.size()) row_end.push_back(0);
    row_end[row] = lx + w;
    out->push_back({lx, a.y + 4 + static_cast<double>(row) * 16, w, text});
  }
  return true;
}

void event_lines(Svg& s, const Area& a, const Linear& xs, const Events& evs) {
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x >= a.x - 0.5 && x <= a.right() + 0.5) s.line(x, a.y, x, a.bottom(), "#495057", 1.2, "5 4");
  }
}

void event_labels(Svg& s, const std::vector<LabelPlace>& places) {
  for (const auto& p : places) {
    s.rect(p.x, p.y, p.w, 14, "#ffffff", "fill-opacity=\"0.85\"");
    s.text(p.x + 3, p.y + 11, esc(p.text), "start", 11, "#343a40");
  }
}

// Numbers (1-based positions in all) above the plot area; markers that would
// overlap are merged ("2,3").
void event_markers(Svg& s, const Area& a, const Linear& xs, const Events& evs, const Events& all) {
  std::vector<std::pair<double, std::string>> marks;  // x, text
  for (const auto& e : evs) {
    const double x = xs(e.first);
    if (x < a.x - 0.5 || x > a.right() + 0.5) continue;
    const auto it = std::find(all.begin(), all.end(), e);
    const std::string n = std::to_string(it - all.begin() + 1);
    if (!marks.empty()) {
      auto& last = marks.back();
      const double lw = std::max(14.0, text_w(last.second, 10) + 6);
      if (x - last.first < lw / 2 + 9) {
        last.second += "," + n;
        continue;
      }
    }
    marks.push_back({x, n});
  }
  for (const auto& [x, text] : marks) marker(s, x, a.y - 2, text);
}

// The key to the numbered markers, wrapping; returns the height used.
double event_key(Svg& s, double x0, double y0, double width, const Events& all) {
  double x = x0, y = y0;
  s.text(x, y + 11, "events:", "start", 12, "#343a40");
  x += text_w("events:", 12) + 10;
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string n = std::to_string(i + 1), text = event_text(all[i]);
    const double w = 20 + text_w(text, 12) + 16;
    if (x + w > x0 + width && x > x0 + 70) {
      x = x0 + text_w("events:", 12) + 10;
      y += 20;
    }
    marker(s, x + 7, y + 14, n);
    s.text(x + 20, y + 11, esc(text), "start", 12, "#343a40");
    x += w;
  }
  return y - y0 + 20;
}

}  // namespace metaroce::scenario::report_internal
