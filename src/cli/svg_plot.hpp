// segbloom demo: a line chart with a linear x axis and a logarithmic y axis, written
// as a standalone SVG document by hand (no library).
//
// Points with y <= 0 cannot be drawn on a log axis: they break the line (a rate of 0
// measured means "below the resolution", which the caption should say).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace segbloom::cli {

struct PlotSeries {
  std::string name;   // legend entry
  std::string color;  // any SVG colour, e.g. "#1f77b4"
  std::vector<std::pair<double, double>> points;  // (x, y), x increasing
  bool dashed = false;
  bool markers = true;
};

struct LogPlot {
  std::string title;
  std::string subtitle;  // a smaller second line (conditions of the measurement)
  std::string x_label;
  std::string y_label;
  double x_min = 0, x_max = 1;
  double x_tick_step = 1;
  std::string x_tick_suffix;  // appended to each x tick label ("C")
  int y_min_decade = -6;      // y axis from 10^y_min_decade ...
  int y_max_decade = 0;       // ... to 10^y_max_decade
  int width = 720, height = 440;
  std::vector<PlotSeries> series;
};

// The SVG document: axes, grid, ticks, labels, one polyline per series, legend.
// Throws std::invalid_argument for an empty x range or y_min_decade >= y_max_decade.
std::string render_svg(const LogPlot& plot);

}  // namespace segbloom::cli
