// svg_plot.hpp - a small line-chart writer emitting plain SVG 1.1 (Debian has
// no small, maintained C++ plotting library). Used by `accelctl bench --svg`.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace accelctl::svg {

struct Series {
  std::string id;     // becomes the polyline's class "series <id>" and data-series
  std::string label;  // legend text
  std::vector<std::pair<double, double>> points;  // (x, y); x > 0 on a log2 axis
  bool dashed = false;  // a reference line (a ceiling), drawn dashed in grey
};

// One chart: a log2 x axis, a linear y axis from 0, one polyline per series
// with at least one point, a legend.
struct Chart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string group_attrs;  // extra attributes of the chart's <g> (already escaped)
  std::vector<Series> series;
  std::function<std::string(double)> x_tick_text;  // label of a power-of-two tick
};

// Text escaped for SVG character data and attribute values (& < > " ').
std::string escape(const std::string& text);

// A complete SVG document: the charts stacked vertically under `title`.
std::string render(const std::string& title, const std::vector<Chart>& charts);

}  // namespace accelctl::svg
