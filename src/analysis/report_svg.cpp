// The svg format: a self-contained SVG flame graph, one tower per thread. The boxes are laid
// out here; the script that zooms, searches and shows details (flamegraph.js) and the style
// (flamegraph.css) are assets embedded at build time (embed_asset.py), written as they are.
#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/report_common.hpp"
#include "analysis/reports.hpp"

namespace pyust::analysis {

namespace {

#include "analysis/flamegraph_css.inc"
#include "analysis/flamegraph_js.inc"

std::string xml_text(const std::string& text)
{
    std::string out;
    for (const char c : text) {
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
        default:
            out += c;
        }
    }
    return out;
}

// One box of the flame graph.
struct Flame {
    std::string label;
    Timestamp total = 0;
    Timestamp self = 0;
    std::uint64_t calls = 0;
    int depth = 0;
    Timestamp x = 0; // start, in ns from the left edge
    const char* kind = "py";
};

// The label cut to what fits in width pixels (about 6.5 per character), as the script does.
std::string fit_label(const std::string& label, double width)
{
    const double room = (width - 6) / 6.5;
    if (room < 3)
        return std::string();
    const std::size_t n = static_cast<std::size_t>(room);
    if (label.size() <= n)
        return label;
    std::size_t cut = n - 2;
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80)
        --cut; // never inside a UTF-8 sequence
    return label.substr(0, cut) + "..";
}

std::string flame_color(const Flame& flame)
{
    std::uint32_t hash = 2166136261u;
    for (const char c : flame.label)
        hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
    if (std::string(flame.kind) == "top")
        return "#c8c8c8";
    if (std::string(flame.kind) == "kernel")
        return printf_string("hsl(%u,45%%,%u%%)", 100 + hash % 40, 55 + (hash >> 8) % 15);
    if (std::string(flame.kind) == "c")
        return printf_string("hsl(%u,55%%,%u%%)", 195 + hash % 40, 60 + (hash >> 8) % 15);
    return printf_string("hsl(%u,80%%,%u%%)", hash % 55, 55 + (hash >> 8) % 15);
}

// Writes text with each @NAME@ whose NAME values holds replaced by its value; any other '@' is
// written as it is. Throws what out throws.
void write_filled(std::ostream& out, std::string_view text,
                  const std::map<std::string_view, std::string>& values)
{
    for (std::size_t at = text.find('@'); at != std::string_view::npos; at = text.find('@')) {
        const std::size_t end = text.find('@', at + 1);
        const auto value = end == std::string_view::npos
                               ? values.end()
                               : values.find(text.substr(at + 1, end - at - 1));
        if (value == values.end()) {
            out << text.substr(0, at + 1);
            text.remove_prefix(at + 1);
            continue;
        }
        out << text.substr(0, at) << value->second;
        text.remove_prefix(end + 1);
    }
    out << text;
}

} // namespace

Cuts write_svg(const StackModel& model, std::ostream& out, Timestamp min_duration,
               const std::string& title, const ReportOptions& options)
{
    const std::vector<const Thread*> threads = model.threads();
    Timestamp grand_total = 0;
    for (const Thread* thread : threads)
        for (const std::uint32_t child : thread->nodes()[0].children)
            grand_total += thread->nodes()[child].total_ns;
    // A box narrower than a tenth of a pixel of the 1200-pixel graph is not worth drawing.
    const Timestamp min_width = std::max<Timestamp>(min_duration, grand_total / 12000);

    std::vector<Flame> flames;
    flames.push_back(Flame{"all", grand_total, 0, 0, 0, 0, "top"});
    Timestamp thread_x = 0;
    int max_depth = 0;
    std::uint64_t deep = 0; // call paths cut by options.max_depth
    // Frames start at depth 2, above "all" and the thread.
    const auto deepest = static_cast<std::size_t>(options.max_depth + 1);
    std::vector<ContextNode> owned;
    for (const Thread* thread : threads) {
        const auto& nodes = shown_nodes(model, *thread, options, owned);
        Timestamp thread_total = 0;
        for (const std::uint32_t child : nodes[0].children)
            thread_total += nodes[child].total_ns;
        if (thread_total <= 0 || thread_total < min_width)
            continue;
        flames.push_back(
            Flame{thread_title(*thread, options), thread_total, 0, 0, 1, thread_x, "top"});
        // (node, depth, x)
        std::vector<std::tuple<std::uint32_t, int, Timestamp>> todo;
        Timestamp x = thread_x;
        for (const std::uint32_t child : nodes[0].children) {
            todo.emplace_back(child, 2, x);
            x += nodes[child].total_ns;
        }
        while (!todo.empty()) {
            const auto [index, depth, node_x] = todo.back();
            todo.pop_back();
            const ContextNode& node = nodes[index];
            if (node.is_empty() || node.total_ns < min_width)
                continue;
            if (options.max_depth && static_cast<std::size_t>(depth) > deepest) {
                // One grey box for the call paths from here up.
                const std::uint64_t paths = 1 + paths_below(nodes, index);
                flames.push_back(
                    Flame{cut_label(paths), node.total_ns, 0, 0, depth, node_x, "top"});
                max_depth = std::max(max_depth, depth);
                deep += paths;
                continue;
            }
            flames.push_back(Flame{model.label(node.id), node.total_ns, node.self_ns, node.calls,
                                   depth, node_x,
                                   node.id.is_kernel ? "kernel"
                                   : node.id.is_c    ? "c"
                                                     : "py"});
            max_depth = std::max(max_depth, depth);
            Timestamp child_x = node_x;
            for (const std::uint32_t child : node.children) {
                todo.emplace_back(child, depth + 1, child_x);
                child_x += nodes[child].total_ns;
            }
        }
        thread_x += thread_total;
    }
    const double total = grand_total > 0 ? static_cast<double>(grand_total) : 1.0;
    const int row = 16;
    const int height = 34 + (max_depth + 1) * row + 26;

    out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" height=\"" << height
        << "\" viewBox=\"0 0 1200 " << height
        << "\" font-family=\"Verdana,sans-serif\" font-size=\"11\">\n"
        << "<style>" << flamegraph_css << "</style>\n"
        << "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n"
        << "<text x=\"600\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">" << xml_text(title)
        << "</text>\n"
        << "<text id=\"reset\" class=\"b\" x=\"10\" y=\"20\" display=\"none\">Reset zoom</text>\n"
        << "<text id=\"search\" class=\"b\" x=\"1190\" y=\"20\" text-anchor=\"end\">Search</text>\n"
        << "<text id=\"details\" x=\"10\" y=\"" << height - 8 << "\"> </text>\n"
        << "<g id=\"frames\">\n";
    // Each box is a line; once the output reaches options.max_bytes, the boxes left are left out
    // (the deepest last: a box's parent comes before it) and the document is closed all the same.
    Budget boxes(out, options.max_bytes, "boxes");
    for (const Flame& flame : flames) {
        if (boxes.is_full()) {
            boxes.skip();
            continue;
        }
        const double percent = 100.0 * static_cast<double>(flame.total) / total;
        std::string details = flame.label + " — " + format_duration(flame.total) +
                              printf_string(" (%.2f%%)", percent);
        if (flame.calls)
            details += ", self " + format_duration(flame.self) + ", " +
                       std::to_string(flame.calls) + (flame.calls == 1 ? " call" : " calls");
        // The unzoomed layout is written out too, so that viewers without scripts show it;
        // the script redoes the same layout on load and at each zoom.
        const double x = static_cast<double>(flame.x) / total;
        const double w = static_cast<double>(flame.total) / total;
        const double px = 10 + x * 1180;
        const double pw = w * 1180;
        const int py = height - 26 - (flame.depth + 1) * row;
        std::ostringstream box;
        box << "<g class=\"f\" data-x=\"" << printf_string("%.9f", x) << "\" data-w=\""
            << printf_string("%.9f", w) << "\" data-d=\"" << flame.depth << "\" data-l=\""
            << xml_text(flame.label) << "\"><title>" << xml_text(details) << "</title><rect x=\""
            << printf_string("%.2f", px) << "\" y=\"" << py << "\" width=\""
            << printf_string("%.2f", pw) << "\" height=\"" << row - 1 << "\" fill=\""
            << flame_color(flame) << "\" rx=\"2\"/><text x=\"" << printf_string("%.2f", px + 3)
            << "\" y=\"" << py + row - 4 << "\">" << xml_text(fit_label(flame.label, pw))
            << "</text></g>\n";
        boxes.line(box.str());
    }
    out << "</g>\n<script><![CDATA[\n";
    write_filled(out, flamegraph_js,
                 {{"ROW", std::to_string(row)}, {"BOTTOM", std::to_string(height - 26)}});
    out << "\n]]></script>\n</svg>\n";
    return boxes.cuts(deep);
}

} // namespace pyust::analysis
