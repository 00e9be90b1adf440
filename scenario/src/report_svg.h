// The SVG chart kit the plots (report_plots.cc) draw with: scales, ticks, an
// SVG writer, axes, legends and fault-event annotations (report_svg.cc).
// Private to the report sources.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace metaroce::scenario::report_internal {

inline constexpr double kW = 1120;  // plot width (px)

double text_w(std::string_view s, double size);  // estimated width of s at font size px
// Sequential scale for utilisation 0..1 (light grey -> yellow-green -> deep blue).
std::string util_colour(double u);
// Coordinates in SVG: one decimal, no "-0.0".
std::string px(double v);

struct Ticks {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> v;
  int decimals = 0;
};

Ticks nice_ticks(double lo, double hi, int target = 5);

struct Area {
  double x, y, w, h;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

struct Linear {
  double d0, d1, r0, r1;
  double operator()(double v) const { return d1 == d0 ? r0 : r0 + (v - d0) / (d1 - d0) * (r1 - r0); }
};

class Svg {
 public:
  std::ostringstream o;
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double sw = 1,
            const std::string& dash = "");
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "");
  // html = already escaped content (may hold <tspan>s).
  void text(double x, double y, const std::string& html, const std::string& anchor = "start", double size = 12,
            const std::string& fill = "#343a40", const std::string& extra = "");
  void polyline(const std::vector<std::pair<double, double>>& pts, const std::string& stroke, double sw,
                const std::string& dash = "");
  void circle(double cx, double cy, double r, const std::string& fill, const std::string& stroke = "#ffffff");
  // The complete <svg> element, kW wide and h high, with everything drawn so far.
  std::string wrap(const std::string& id, double h, const std::string& label) const;
};

// Grid, axes, ticks and axis titles for a plot area.
void axes(Svg& s, const Area& a, const Linear& xs, const Ticks& xt, const std::string& xunit, const Linear& ys,
          const Ticks& yt, const std::string& yunit, const std::string& xtitle, const std::string& ytitle);

struct LegendItem {
  std::string label;
  std::string colour;
  std::string dash;
  enum { kLine, kBox } kind = kLine;
  double opacity = 1;
};

// Horizontal legend, wrapping; returns the height used.
double legend(Svg& s, double x0, double y0, double width, const std::vector<LegendItem>& items);

// Fault events: dashed vertical lines, labelled either in full at the top of
// the plot area (staggered into rows so they do not overlap) or, when that
// does not fit, with numbers above the plot that an event key explains.
using Events = std::vector<std::pair<double, std::string>>;

struct LabelPlace {
  double x, y, w;
  std::string text;
};

// Full labels for evs in a; false if they need more than max_rows rows.
bool place_event_labels(const Area& a, const Linear& xs, const Events& evs, size_t max_rows,
                        std::vector<LabelPlace>* out);
void event_lines(Svg& s, const Area& a, const Linear& xs, const Events& evs);
void event_labels(Svg& s, const std::vector<LabelPlace>& places);
// Numbers (1-based positions in all) above the plot area; markers that would
// overlap are merged ("2,3").
void event_markers(Svg& s, const Area& a, const Linear& xs, const Events& evs, const Events& all);
// The key to the numbered markers, wrapping; returns the height used.
double event_key(Svg& s, double x0, double y0, double width, const Events& all);

}  // namespace metaroce::scenario::report_internal
