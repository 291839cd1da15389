// segbloom demo: hand-written SVG line chart (see svg_plot.hpp).
#include "svg_plot.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace segbloom::cli {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A tick label: whole numbers without decimals.
std::string tick(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 1e-9) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%g", v);
  }
  return buf;
}

}  // namespace

std::string render_svg(const LogPlot& p) {
  if (!(p.x_max > p.x_min) || p.y_min_decade >= p.y_max_decade || !(p.x_tick_step > 0) ||
      p.width < 200 || p.height < 150) {
    throw std::invalid_argument("segbloom demo: empty plot range");
  }
  const double left = 78, right = 18, top = p.subtitle.empty() ? 44 : 60, bottom = 56;
  const double w = p.width - left - right, h = p.height - top - bottom;
  const auto px = [&](double x) { return left + (x - p.x_min) / (p.x_max - p.x_min) * w; };
  const auto py = [&](double y) {
    const double d = (std::log10(y) - p.y_min_decade) / (p.y_max_decade - p.y_min_decade);
    return top + (1 - d) * h;
  };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << p.width << "\" height=\""
    << p.height << "\" viewBox=\"0 0 " << p.width << ' ' << p.height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << p.width / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">"
    << escape(p.title) << "</text>\n";
  if (!p.subtitle.empty()) {
    s << "<text x=\"" << p.width / 2 << "\" y=\"38\" text-anchor=\"middle\" fill=\"#555\">"
      << escape(p.subtitle) << "</text>\n";
  }

  // Grid and y ticks: one line per decade, faint lines at 2x and 5x.
  s << "<g stroke=\"#ddd\">\n";
  for (int d = p.y_min_decade; d <= p.y_max_decade; ++d) {
    const double y = py(std::pow(10.0, d));
    s << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(left + w)
      << "\" y2=\"" << num(y) << "\"/>\n";
    if (d == p.y_max_decade) break;
    for (const double m : {2.0, 5.0}) {
      const double ym = py(m * std::pow(10.0, d));
      s << "<line x1=\"" << num(left) << "\" y1=\"" << num(ym) << "\" x2=\"" << num(left + w)
        << "\" y2=\"" << num(ym) << "\" stroke=\"#f0f0f0\"/>\n";
    }
  }
  for (double x = p.x_min; x <= p.x_max + 1e-9; x += p.x_tick_step) {
    s << "<line x1=\"" << num(px(x)) << "\" y1=\"" << num(top) << "\" x2=\"" << num(px(x))
      << "\" y2=\"" << num(top + h) << "\"/>\n";
  }
  s << "</g>\n";
  s << "<g text-anchor=\"end\">\n";
  for (int d = p.y_min_decade; d <= p.y_max_decade; ++d) {
    s << "<text x=\"" << num(left - 6) << "\" y=\"" << num(py(std::pow(10.0, d)) + 4)
      << "\">10<tspan dy=\"-6\" font-size=\"9\">" << d << "</tspan></text>\n";
  }
  s << "</g>\n<g text-anchor=\"middle\">\n";
  for (double x = p.x_min; x <= p.x_max + 1e-9; x += p.x_tick_step) {
    s << "<text x=\"" << num(px(x)) << "\" y=\"" << num(top + h + 16) << "\">" << tick(x)
      << (x != 0 ? escape(p.x_tick_suffix) : "") << "</text>\n";
  }
  s << "</g>\n";
  s << "<rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\"" << num(w)
    << "\" height=\"" << num(h) << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << num(left + w / 2) << "\" y=\"" << num(p.height - 12.0)
    << "\" text-anchor=\"middle\">" << escape(p.x_label) << "</text>\n";
  s << "<text transform=\"translate(16 " << num(top + h / 2) << ") rotate(-90)\" "
    << "text-anchor=\"middle\">" << escape(p.y_label) << "</text>\n";

  // Series: polylines broken at points the log axis cannot show; clipped to the plot.
  s << "<clipPath id=\"plot\"><rect x=\"" << num(left) << "\" y=\"" << num(top) << "\" width=\""
    << num(w) << "\" height=\"" << num(h) << "\"/></clipPath>\n";
  for (const PlotSeries& series : p.series) {
    s << "<g class=\"series\" data-name=\"" << escape(series.name) << "\" clip-path=\"url(#plot)\">\n";
    std::string run;
    const auto flush = [&] {
      if (!run.empty()) {
        s << "<polyline fill=\"none\" stroke=\"" << escape(series.color)
          << "\" stroke-width=\"2\"" << (series.dashed ? " stroke-dasharray=\"6 4\"" : "")
          << " points=\"" << run << "\"/>\n";
      }
      run.clear();
    };
    for (const auto& [x, y] : series.points) {
      if (!(y > 0)) {
        flush();
        continue;
      }
      run += (run.empty() ? "" : " ") + num(px(x)) + ',' + num(py(y));
    }
    flush();
    if (series.markers) {
      for (const auto& [x, y] : series.points) {
        if (y > 0) {
          s << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(py(y)) << "\" r=\"2.5\" fill=\""
            << escape(series.color) << "\"/>\n";
        }
      }
    }
    s << "</g>\n";
  }

  // Legend, bottom right inside the plot (where rates far below the target would be).
  const double legend_h = 18.0 * static_cast<double>(p.series.size()) + 8;
  const double lx = left + w - 300, ly = top + h - legend_h + 4;
  s << "<g class=\"legend\">\n<rect x=\"" << num(lx - 6) << "\" y=\"" << num(ly - 8)
    << "\" width=\"294\" height=\"" << num(legend_h)
    << "\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#bbb\"/>\n";
  for (std::size_t i = 0; i < p.series.size(); ++i) {
    const PlotSeries& series = p.series[i];
    const double y = ly + 18.0 * static_cast<double>(i) + 4;
    s << "<line x1=\"" << num(lx) << "\" y1=\"" << num(y) << "\" x2=\"" << num(lx + 26)
      << "\" y2=\"" << num(y) << "\" stroke=\"" << escape(series.color) << "\" stroke-width=\"2\""
      << (series.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    s << "<text x=\"" << num(lx + 34) << "\" y=\"" << num(y + 4) << "\">" << escape(series.name)
      << "</text>\n";
  }
  s << "</g>\n</svg>\n";
  return s.str();
}

}  // namespace segbloom::cli
