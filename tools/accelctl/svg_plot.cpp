// svg_plot.cpp - plain SVG line charts: axes, ticks, grid, labels, one
// polyline per series and a legend. Every text is escaped; numbers are
// written with a fixed precision, so the output is the same on every locale.
#include "svg_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace accelctl::svg {
namespace {

constexpr double kWidth = 820;
constexpr double kChartHeight = 400;
constexpr double kTitleHeight = 36;
constexpr double kLeft = 70, kRight = 210, kTop = 34, kBottom = 54;

// Colour-blind-safe palette (Okabe and Ito), then greys.
constexpr const char* kColours[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                    "#CC79A7", "#56B4E9", "#000000", "#999999"};

// The smallest 1, 2 or 5 x 10^k at or above v (v > 0).
double nice_ceiling(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// Where a chart's data lands: the data range (x as log2) and the plot
// area in SVG coordinates, with the mapping from one to the other.
struct Frame {
  double xmin = 0, xmax = 0, ytop = 1;
  double px0 = 0, px1 = 0, py0 = 0, py1 = 0;

  double sx(double lx) const { return px0 + (lx - xmin) / (xmax - xmin) * (px1 - px0); }
  double sy(double y) const { return py1 - y / ytop * (py1 - py0); }
};

// The frame of chart `c` drawn from y0 down: x over whole powers of two
// around every finite point, y from 0 to a round value above the largest.
Frame frame_for(const Chart& c, double y0) {
  double xmin = 0, xmax = 0, ymax = 0;
  bool any = false;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      if (!(x > 0) || !std::isfinite(y)) continue;
      const double lx = std::log2(x);
      xmin = any ? std::min(xmin, lx) : lx;
      xmax = any ? std::max(xmax, lx) : lx;
      ymax = std::max(ymax, y);
      any = true;
    }
  Frame f;
  f.xmin = std::floor(xmin);
  f.xmax = std::ceil(xmax);
  if (f.xmax <= f.xmin) f.xmax = f.xmin + 1;
  f.ytop = ymax > 0 ? nice_ceiling(ymax) : 1;
  f.px0 = kLeft;
  f.px1 = kWidth - kRight;
  f.py0 = y0 + kTop;
  f.py1 = y0 + kChartHeight - kBottom;
  return f;
}

// Grid and ticks: every power of two on x, labelled so labels do not crowd.
void render_x_ticks(std::string& out, const Chart& c, const Frame& f) {
  const int span = static_cast<int>(f.xmax - f.xmin);
  const int label_every = span <= 10 ? 1 : span <= 20 ? 2 : 4;
  for (int i = 0; i <= span; ++i) {
    const double lx = f.xmin + i;
    const double x = f.sx(lx);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#e5e5e5\"/>\n<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" "
        "x2=\"{0:.1f}\" y2=\"{3:.1f}\" stroke=\"#000\"/>\n",
        x, f.py0, f.py1, f.py1 + 5);
    if (i % label_every == 0) {
      const std::string text = c.x_tick_text ? c.x_tick_text(std::exp2(lx)) : number(std::exp2(lx));
      out += fmt::format(
          "<text class=\"tick-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
          "font-size=\"11\">{}</text>\n",
          x, f.py1 + 18, escape(text));
    }
  }
}

// Grid, ticks and labels at six even steps of y from 0 to the top.
void render_y_ticks(std::string& out, const Frame& f) {
  constexpr int kYTicks = 5;
  for (int i = 0; i <= kYTicks; ++i) {
    const double v = f.ytop * i / kYTicks;
    const double y = f.sy(v);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#e5e5e5\"/>\n<line class=\"tick\" x1=\"{3:.1f}\" y1=\"{2:.1f}\" "
        "x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\"/>\n"
        "<text class=\"tick-label\" x=\"{4:.1f}\" y=\"{5:.1f}\" text-anchor=\"end\" "
        "font-size=\"11\">{6}</text>\n",
        f.px0, f.px1, y, f.px0 - 5, f.px0 - 8, y + 4, escape(number(v)));
  }
}

// The two axis lines and their labels.
void render_axes(std::string& out, const Chart& c, const Frame& f) {
  out += fmt::format(
      "<line class=\"axis\" x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\" "
      "stroke=\"#000\"/>\n<line class=\"axis\" x1=\"{0:.1f}\" y1=\"{3:.1f}\" x2=\"{0:.1f}\" "
      "y2=\"{2:.1f}\" stroke=\"#000\"/>\n",
      f.px0, f.px1, f.py1, f.py0);
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
      "font-size=\"12\">{}</text>\n",
      (f.px0 + f.px1) / 2, f.py1 + 40, escape(c.x_label));
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" "
      "font-size=\"12\" transform=\"rotate(-90 {0:.1f} {1:.1f})\">{2}</text>\n",
      f.px0 - 50, (f.py0 + f.py1) / 2, escape(c.y_label));
}

// One polyline and legend entry per series with a point to draw.
void render_series(std::string& out, const Chart& c, const Frame& f) {
  int k = 0;
  for (const auto& s : c.series) {
    std::string pts;
    for (const auto& [x, y] : s.points) {
      if (!(x > 0) || !std::isfinite(y)) continue;
      pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", f.sx(std::log2(x)), f.sy(y));
    }
    if (pts.empty()) continue;
    const char* colour =
        s.dashed ? "#555555" : kColours[k % (sizeof kColours / sizeof kColours[0])];
    const char* dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    out += fmt::format(
        "<polyline class=\"series {0}\" data-series=\"{0}\" fill=\"none\" stroke=\"{1}\" "
        "stroke-width=\"2\"{4} points=\"{2}\"><title>{3}</title></polyline>\n",
        escape(s.id), colour, pts, escape(s.label), dash);
    const double ly = f.py0 + 8 + 20 * k;
    out += fmt::format(
        "<g class=\"legend-entry\"><line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
        "y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"{7}/><text x=\"{4:.1f}\" y=\"{5:.1f}\" "
        "font-size=\"12\">{6}</text></g>\n",
        f.px1 + 16, ly, f.px1 + 40, colour, f.px1 + 46, ly + 4, escape(s.label), dash);
    ++k;
  }
}

// Chart `c` as one <g>, its top at y0.
void render_chart(std::string& out, const Chart& c, double y0) {
  const Frame f = frame_for(c, y0);
  out += fmt::format("<g class=\"chart\"{}>\n", c.group_attrs.empty() ? "" : " " + c.group_attrs);
  out += fmt::format(
      "<text class=\"chart-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
      "font-size=\"14\" font-weight=\"bold\">{}</text>\n",
      (f.px0 + f.px1) / 2, y0 + 20, escape(c.title));
  render_x_ticks(out, c, f);
  render_y_ticks(out, f);
  render_axes(out, c, f);
  render_series(out, c, f);
  out += "</g>\n";
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab, newline and CR are not allowed in XML 1.0.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += ' ';
        else
          out += ch;
    }
  }
  return out;
}

std::string render(const std::string& title, const std::vector<Chart>& charts) {
  const double height =
      kTitleHeight + kChartHeight * static_cast<double>(std::max<size_t>(1, charts.size()));
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0:.0f}\" "
      "height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\">\n"
      "<title>{2}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{3:.1f}\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" "
      "font-weight=\"bold\">{2}</text>\n",
      kWidth, height, escape(title), kWidth / 2);
  for (size_t i = 0; i < charts.size(); ++i)
    render_chart(out, charts[i], kTitleHeight + kChartHeight * static_cast<double>(i));
  out += "</svg>\n";
  return out;
}

}  // namespace accelctl::svg
