// Small self-contained SVG charts (line and scatter) for the evaluation report: no scripts, no
// external fonts or libraries, so report.html opens anywhere offline.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace lazyllm::eval::svg {

struct Series {
    std::string name;   // legend entry; "" keeps it out of the legend
    std::string color;  // CSS color
    std::vector<double> x, y;
    std::vector<std::string> tips;  // per point <title> tooltips (optional)
    bool line = true;
    bool markers = true;
    double marker_r = 3.5;
    bool diamond = false;       // diamond markers instead of circles
    bool label_points = false;  // write tips[i] next to each point
};

struct Axis {
    std::string label;
    double min = std::numeric_limits<double>::quiet_NaN();  // NaN: from the data
    double max = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::string> categories;  // when set: ticks at x = 0..n-1 with these labels
};

struct Plot {
    std::string title;
    Axis x, y;
    int width = 600, height = 340;
    std::vector<Series> series;
    std::vector<double> x_refs;  // dashed vertical reference lines (e.g. speedup 1x)
};

std::string render(const Plot& plot);

// About `target` round tick values covering [lo, hi] (steps of 1, 2, 2.5 or 5 x 10^k).
std::vector<double> nice_ticks(double lo, double hi, int target);
// Escapes & < > " ' for XML and HTML text and attributes.
std::string escape(std::string_view s);
// Stable colors: full grey, lazy red, static blue, random green, gemfilter purple; others from a
// palette by index.
std::string policy_color(std::string_view policy, int index);
// A red-yellow-green background for a score in [0, 1] (heat-map cells).
std::string score_color(double score);

}  // namespace lazyllm::eval::svg
