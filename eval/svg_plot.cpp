#include "eval/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace lazyllm::eval::svg {

namespace {

constexpr int kMarginLeft = 60, kMarginRight = 130, kMarginTop = 34, kMarginBottom = 48;

struct Range {
    double lo, hi;
    std::vector<double> ticks;
};

Range make_range(const Axis& axis, const std::vector<Series>& series, bool is_x) {
    if (!axis.categories.empty()) {
        Range r{-0.5, static_cast<double>(axis.categories.size()) - 0.5, {}};
        for (size_t i = 0; i < axis.categories.size(); ++i) {
            r.ticks.push_back(static_cast<double>(i));
        }
        return r;
    }
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Series& s : series) {
        for (double v : is_x ? s.x : s.y) {
            if (!std::isfinite(v)) continue;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    if (!std::isnan(axis.min)) lo = axis.min;
    if (!std::isnan(axis.max)) hi = axis.max;
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0.0, hi = 1.0;
    if (hi - lo < 1e-12) {
        const double pad = std::max(std::abs(lo) * 0.1, 0.5);
        lo -= pad;
        hi += pad;
    }
    Range r{lo, hi, nice_ticks(lo, hi, 6)};
    // Free ends widen to the outer ticks; then a small margin on both sides so markers at the
    // extremes (a score of 1, a speedup of 1x) are not cut by the frame.
    if (std::isnan(axis.min) && !r.ticks.empty()) r.lo = std::min(r.lo, r.ticks.front());
    if (std::isnan(axis.max) && !r.ticks.empty()) r.hi = std::max(r.hi, r.ticks.back());
    const double pad = 0.04 * (r.hi - r.lo);
    r.lo -= pad;
    r.hi += pad;
    return r;
}

std::string tick_label(double v, double step) {
    int decimals = 0;
    while (decimals < 6 && std::abs(step * std::pow(10.0, decimals) -
                                    std::round(step * std::pow(10.0, decimals))) > 1e-6) {
        ++decimals;
    }
    return fmt::format("{:.{}f}", v, decimals);
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
    if (!(hi > lo) || target < 1) return {lo};
    const double raw = (hi - lo) / target;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        step = m * mag;
        if (step >= raw) break;
    }
    std::vector<double> ticks;
    const double first = std::floor(lo / step + 1e-9) * step;
    for (double t = first; t <= hi + step * 0.999; t += step) {
        ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
        if (ticks.size() > 50) break;
    }
    return ticks;
}

std::string escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
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
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string policy_color(std::string_view policy, int index) {
    if (policy == "full") return "#4d4d4d";
    if (policy == "lazy") return "#d62728";
    if (policy == "static") return "#1f77b4";
    if (policy == "random") return "#2ca02c";
    if (policy == "gemfilter") return "#9467bd";
    static constexpr const char* kPalette[] = {"#ff7f0e", "#8c564b", "#e377c2", "#17becf",
                                               "#bcbd22"};
    return kPalette[static_cast<size_t>(std::max(index, 0)) % std::size(kPalette)];
}

std::string score_color(double score) {
    const double t = std::clamp(score, 0.0, 1.0);
    // Red (0) through yellow (0.5) to green (1), light enough for black text.
    const int r = t < 0.5 ? 248 : static_cast<int>(248 - (t - 0.5) * 2 * (248 - 170));
    const int g = t < 0.5 ? static_cast<int>(160 + t * 2 * (230 - 160)) : 230;
    const int b = 150;
    return fmt::format("#{:02x}{:02x}{:02x}", r, g, b);
}

namespace {

// The plotting area and the data-to-pixel maps.
struct Frame {
    int pw = 0, ph = 0;  // width and height of the area inside the margins
    Range xr, yr;
    double px(double x) const { return kMarginLeft + (x - xr.lo) / (xr.hi - xr.lo) * pw; }
    double py(double y) const { return kMarginTop + ph - (y - yr.lo) / (yr.hi - yr.lo) * ph; }
};

// Grid lines, tick labels, the frame, the dashed x references and the axis labels.
std::string axes(const Plot& plot, const Frame& f) {
    std::string s;
    const double xstep = f.xr.ticks.size() > 1 ? f.xr.ticks[1] - f.xr.ticks[0] : 1.0;
    for (size_t i = 0; i < f.xr.ticks.size(); ++i) {
        const double t = f.xr.ticks[i];
        if (t < f.xr.lo - 1e-9 || t > f.xr.hi + 1e-9) continue;
        const std::string label =
            plot.x.categories.empty() ? tick_label(t, xstep) : plot.x.categories[i];
        s += fmt::format(
            "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
            "stroke=\"#e5e5e5\"/>\n<text x=\"{0:.1f}\" y=\"{3}\" "
            "text-anchor=\"middle\">{4}</text>\n",
            f.px(t), kMarginTop, kMarginTop + f.ph, kMarginTop + f.ph + 15, escape(label));
    }
    const double ystep = f.yr.ticks.size() > 1 ? f.yr.ticks[1] - f.yr.ticks[0] : 1.0;
    for (double t : f.yr.ticks) {
        if (t < f.yr.lo - 1e-9 || t > f.yr.hi + 1e-9) continue;
        s += fmt::format(
            "<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\" "
            "stroke=\"#e5e5e5\"/>\n<text x=\"{3}\" y=\"{4:.1f}\" "
            "text-anchor=\"end\">{5}</text>\n",
            f.py(t), kMarginLeft, kMarginLeft + f.pw, kMarginLeft - 5, f.py(t) + 4,
            tick_label(t, ystep));
    }
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
        "stroke=\"#333\"/>\n",
        kMarginLeft, kMarginTop, f.pw, f.ph);
    for (double xref : plot.x_refs) {
        if (xref < f.xr.lo || xref > f.xr.hi) continue;
        s += fmt::format(
            "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
            "stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
            f.px(xref), kMarginTop, kMarginTop + f.ph);
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kMarginLeft + f.pw / 2.0, plot.height - 10, escape(plot.x.label));
    s += fmt::format(
        "<text transform=\"translate(14 {:.1f}) rotate(-90)\" "
        "text-anchor=\"middle\">{}</text>\n",
        kMarginTop + f.ph / 2.0, escape(plot.y.label));
    return s;
}

// One series' markers (circles or diamonds, with their tooltips and optional labels).
std::string markers(const Series& ser, const Frame& f) {
    std::string s;
    const size_t n = std::min(ser.x.size(), ser.y.size());
    for (size_t i = 0; i < n && ser.markers; ++i) {
        if (!std::isfinite(ser.x[i]) || !std::isfinite(ser.y[i])) continue;
        const double cx = f.px(ser.x[i]), cy = f.py(ser.y[i]), r = ser.marker_r;
        const std::string tip =
            i < ser.tips.size() ? "<title>" + escape(ser.tips[i]) + "</title>" : "";
        if (ser.diamond) {
            s += fmt::format(
                "<path d=\"M{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} "
                "{:.1f}Z\" fill=\"{}\" stroke=\"white\">{}</path>\n",
                cx, cy - r, cx + r, cy, cx, cy + r, cx - r, cy, ser.color, tip);
        } else {
            s += fmt::format(
                "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" "
                "fill-opacity=\"0.85\">{}</circle>\n",
                cx, cy, r, ser.color, tip);
        }
        if (ser.label_points && i < ser.tips.size()) {
            s += fmt::format(
                "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" "
                "fill=\"{}\">{}</text>\n",
                cx + r + 2, cy - r, ser.color, escape(ser.tips[i]));
        }
    }
    return s;
}

// Every series, clipped to the frame.
std::string series(const Plot& plot, const Frame& f) {
    std::string s = fmt::format(
        "<clipPath id=\"c{0}{1}\"><rect x=\"{2}\" y=\"{3}\" width=\"{4}\" "
        "height=\"{5}\"/></clipPath>\n<g clip-path=\"url(#c{0}{1})\">\n",
        plot.width, plot.height, kMarginLeft - 6, kMarginTop - 6, f.pw + 12, f.ph + 12);
    for (const Series& ser : plot.series) {
        const size_t n = std::min(ser.x.size(), ser.y.size());
        if (ser.line && n > 1) {
            std::string pts;
            for (size_t i = 0; i < n; ++i) {
                if (!std::isfinite(ser.x[i]) || !std::isfinite(ser.y[i])) continue;
                pts += fmt::format("{:.1f},{:.1f} ", f.px(ser.x[i]), f.py(ser.y[i]));
            }
            s += fmt::format(
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
                "stroke-width=\"1.8\"/>\n",
                pts, ser.color);
        }
        s += markers(ser, f);
    }
    return s + "</g>\n";
}

// The legend, right of the frame.
std::string legend(const Plot& plot, const Frame& f) {
    std::string s;
    int ly = kMarginTop + 8;
    for (const Series& ser : plot.series) {
        if (ser.name.empty()) continue;
        const int lx = kMarginLeft + f.pw + 12;
        if (ser.line) {
            s += fmt::format(
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                "stroke-width=\"1.8\"/>\n",
                lx, ly, lx + 18, ly, ser.color);
        }
        if (ser.markers) {
            s += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{}\"/>\n", lx + 9, ly,
                             ser.color);
        }
        s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 24, ly + 4, escape(ser.name));
        ly += 16;
    }
    return s;
}

}  // namespace

std::string render(const Plot& plot) {
    Frame f;
    f.pw = plot.width - kMarginLeft - kMarginRight;
    f.ph = plot.height - kMarginTop - kMarginBottom;
    f.xr = make_range(plot.x, plot.series, true);
    f.yr = make_range(plot.y, plot.series, false);
    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"11\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n",
        plot.width, plot.height);
    s += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
                     kMarginLeft, escape(plot.title));
    s += axes(plot, f);
    s += series(plot, f);
    s += legend(plot, f);
    s += "</svg>\n";
    return s;
}

}  // namespace lazyllm::eval::svg
