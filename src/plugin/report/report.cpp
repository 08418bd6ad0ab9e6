// sink.pyust.report (see report.hpp): parameters, consumption and the bridges.
#include "plugin/report/report.hpp"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <unistd.h>

#include "analysis/module_filter.hpp"
#include "analysis/reports.hpp"
#include "analysis/stack_model.hpp"
#include "plugin/common/bt_util.hpp"
#include "plugin/common/event_reader.hpp"
#include "plugin/common/params.hpp"
#include "plugin/report/damage.hpp"
#include "plugin/report/output_file.hpp"

namespace pyust::plugin::report {

namespace {

enum class Format { profile, tree, folded, lines, chrome, svg, top, tasks };

// Each format by its name, the parameter's value.
constexpr struct {
    const char* name;
    Format format;
} format_names[] = {
    {"profile", Format::profile}, {"tree", Format::tree},     {"folded", Format::folded},
    {"lines", Format::lines},     {"chrome", Format::chrome}, {"svg", Format::svg},
    {"top", Format::top},         {"tasks", Format::tasks},
};

Format parse_format(const std::string& text)
{
    for (const auto& entry : format_names)
        if (text == entry.name)
            return entry.format;
    throw Error("bad parameter value: name=format, value=" + text +
                ", expected=profile|tree|folded|lines|chrome|svg|top|tasks");
}

const char* format_name(Format format) noexcept
{
    for (const auto& entry : format_names)
        if (format == entry.format)
            return entry.name;
    return "?";
}

analysis::SortKey parse_sort(const std::string& text)
{
    static constexpr struct {
        const char* name;
        analysis::SortKey key;
    } keys[] = {
        {"self", analysis::SortKey::self},
        {"total", analysis::SortKey::total},
        {"calls", analysis::SortKey::calls},
        {"mean", analysis::SortKey::mean},
    };
    for (const auto& entry : keys)
        if (text == entry.name)
            return entry.key;
    throw Error("bad parameter value: name=sort, value=" + text +
                ", expected=self|total|calls|mean");
}

class ReportSink {
public:
    // Reads the parameters and opens the output. Throws Error naming a bad parameter or an
    // output that cannot be opened, BtError, std::bad_alloc.
    ReportSink(bt_self_component_sink* self, const bt_value* params);

    // Creates the upstream iterator. Throws BtError.
    void connect();

    // Consumes one batch. Throws Error (a bad event, an output error), BtError, bad_alloc.
    bt_component_class_sink_consume_method_status consume();

private:
    void process(const bt_message* message);
    bool is_hidden(const PythonEvent& event);
    // Whether a call or return that the module filter hides is a task's root frame, shown all
    // the same (the model needs a step's bounds); tells the model of the other hidden calls,
    // which may resume a task's frames. Throws std::bad_alloc.
    bool is_task_root(const PythonEvent& event);
    void write_report();
    // salvage: takes the current thread's error (upstream could not read on) and keeps its
    // innermost cause for the report. noexcept apart from std::bad_alloc.
    void keep_damage();
    // The damage for the report's text: two lines, after a blank one.
    void write_damage(std::ostream& out) const;
    // The damage for standard error: one line, "<note prefix>warning: damaged trace: ...".
    void note_damage() const;
    // Notes the process and thread of an event (before --pid/--tid select), and the process's
    // command name (procname context) the first time. Throws std::bad_alloc.
    void note_thread(const bt_message* message, const PythonEvent& event);
    // Throws Error listing the processes and threads of the trace when --pid/--tid selected
    // nothing. Throws std::bad_alloc.
    void check_selection() const;
    // top: the refresh (the table of the interval since the previous one). Throws Error (an
    // output error), std::bad_alloc.
    void write_top_frame();
    bool is_top_due() const noexcept;
    // Flushes the output; puts the output file in place. Throws Error (an output error).
    void finish_output();

    bt_self_component_sink* m_self;
    Format m_format = Format::profile;
    std::string m_path;
    std::unique_ptr<OutputFile> m_file; // the output parameter's
    std::ostream* m_out = &std::cout;
    std::optional<std::int64_t> m_pid, m_tid;
    std::optional<analysis::ModuleFilter> m_modules;
    analysis::Timestamp m_min_duration = 0;
    analysis::ReportOptions m_options;
    std::uint64_t m_max_bytes = 0; // chrome
    // Every process and thread that had an event, selected or not, and each process's command
    // name: what an error says when --pid/--tid select nothing, and the processes' titles.
    std::map<std::int64_t, std::set<std::int64_t>> m_seen;
    std::map<std::int64_t, std::string> m_procnames;
    std::map<std::int64_t, std::string> m_scripts;  // the file of its first __main__ code
    std::map<std::int64_t, std::string> m_commands; // its python:process's command line
    analysis::ThreadKey m_last_seen{-1, -1};
    bool m_has_selected = false;
    MessageIteratorRef m_upstream;
    EventReader m_reader;
    analysis::StackModel m_model;
    PythonEvent m_event;
    std::unique_ptr<analysis::ChromeWriter> m_chrome;
    bool m_has_origin = false;
    bool m_is_done = false;
    // top: a table every m_period of wall time, m_count tables at most (0: until the end).
    std::chrono::nanoseconds m_period{1000000000};
    std::int64_t m_count = 0;
    std::int64_t m_frames = 0;
    std::size_t m_max_rows = 0;
    bool m_is_terminal = false;
    std::chrono::steady_clock::time_point m_last_frame;
    analysis::FunctionTable m_before;
    analysis::Timestamp m_before_ts = INT64_MIN;
    analysis::Timestamp m_now = INT64_MIN; // the latest time the upstream vouched for
    std::uint64_t m_events = 0;            // events read since the previous table
    // salvage=yes: an upstream error ends the reading instead of failing the sink; the report
    // covers what was read and says where reading stopped and why.
    bool m_is_salvaging = false;
    std::string m_note_prefix = "sink.pyust.report: "; // of the lines to standard error
    std::optional<std::string> m_damage;               // why upstream stopped (salvage)
    std::uint64_t m_events_read = 0;                   // every python:* event read
    analysis::Timestamp m_last_ts = INT64_MIN;         // the latest event time read
};

ReportSink::ReportSink(bt_self_component_sink* self, const bt_value* params) : m_self(self)
{
    check_known_params(params, {"format",   "output",    "pid",          "tid",
                                "begin",    "end",       "min-duration", "modules",
                                "period",   "count",     "rows",         "salvage",
                                "sort",     "limit",     "min-share",    "merge-processes",
                                "max-size", "max-depth", "raw-names",    "note-prefix",
                                "tasks"});
    m_is_salvaging = bool_param(params, "salvage").value_or(false);
    if (const auto prefix = string_param(params, "note-prefix"))
        m_note_prefix = *prefix;
    if (const auto format = string_param(params, "format"))
        m_format = parse_format(*format);
    for (const char* name : {"period", "count", "rows"}) {
        const auto value = int_param(params, name);
        if (!value)
            continue;
        if (m_format != Format::top)
            throw Error(std::string("bad parameter: name=") + name +
                        ", reason=only with format=top");
        if (*value < 0 || (*value == 0 && std::strcmp(name, "period") == 0))
            throw Error(
                std::string("bad parameter value: name=") + name +
                ", value=" + std::to_string(*value) +
                (std::strcmp(name, "period") == 0 ? ", expected=ns > 0" : ", expected=>= 0"));
    }
    if (const auto period = int_param(params, "period"))
        m_period = std::chrono::nanoseconds(*period);
    m_count = int_param(params, "count").value_or(0);
    m_max_rows = static_cast<std::size_t>(int_param(params, "rows").value_or(0));
    m_pid = int_param(params, "pid");
    m_tid = int_param(params, "tid");
    const auto begin = int_param(params, "begin");
    const auto end = int_param(params, "end");
    if (begin || end) {
        const analysis::Timestamp first = begin.value_or(INT64_MIN);
        const analysis::Timestamp last = end.value_or(INT64_MAX);
        if (first > last)
            throw Error("bad parameter value: name=begin, value=" + std::to_string(first) +
                        ", reason=after end=" + std::to_string(last));
        m_model.set_window(first, last);
    }
    if (const auto sort = string_param(params, "sort"))
        m_options.sort = parse_sort(*sort);
    for (const char* name : {"limit", "max-size", "max-depth"}) {
        if (const auto value = int_param(params, name); value && *value < 0)
            throw Error(std::string("bad parameter value: name=") + name +
                        ", value=" + std::to_string(*value) + ", expected=>= 0");
    }
    m_options.limit = static_cast<std::size_t>(int_param(params, "limit").value_or(0));
    m_max_bytes = static_cast<std::uint64_t>(int_param(params, "max-size").value_or(0));
    m_options.max_bytes = m_max_bytes;
    m_options.max_depth = static_cast<std::size_t>(int_param(params, "max-depth").value_or(0));
    const bool is_tree =
        m_format == Format::tree || m_format == Format::folded || m_format == Format::svg;
    if (m_options.max_depth && !is_tree && m_format != Format::tasks)
        throw Error("bad parameter: name=max-depth, reason=only with format=tree|folded|svg|tasks");
    m_options.tasks = bool_param(params, "tasks").value_or(false);
    if (m_options.tasks && !is_tree)
        throw Error("bad parameter: name=tasks, reason=only with format=tree|folded|svg");
    if (const auto share = string_param(params, "min-share")) {
        char* end = nullptr;
        const double percent = std::strtod(share->c_str(), &end);
        if (share->empty() || *end != '\0' || !(percent >= 0 && percent <= 100))
            throw Error("bad parameter value: name=min-share, value=" + *share +
                        ", expected=a percentage from 0 to 100");
        m_options.min_share = percent / 100;
    }
    m_options.merge_processes = bool_param(params, "merge-processes").value_or(false);
    m_model.set_raw_native_names(bool_param(params, "raw-names").value_or(false));
    m_min_duration = int_param(params, "min-duration").value_or(0);
    if (m_min_duration < 0)
        throw Error("bad parameter value: name=min-duration, value=" +
                    std::to_string(m_min_duration) + ", expected=ns >= 0");
    if (const auto modules = string_param(params, "modules")) {
        try {
            m_modules.emplace(*modules);
        } catch (const std::invalid_argument& error) {
            throw Error("bad parameter value: name=modules, value=" + *modules +
                        ", reason=" + error.what());
        }
    }
    if (const auto output = string_param(params, "output")) {
        m_path = *output;
        m_file = std::make_unique<OutputFile>(m_path);
        m_out = &m_file->stream();
    }
    m_is_terminal = m_format == Format::top && m_out == &std::cout && isatty(STDOUT_FILENO);
    m_last_frame = std::chrono::steady_clock::now();
    if (m_format == Format::chrome) {
        m_chrome =
            std::make_unique<analysis::ChromeWriter>(m_model, *m_out, m_min_duration, m_max_bytes);
        m_model.set_listener(m_chrome.get());
    }
    check(bt_self_component_sink_add_input_port(self, "in", nullptr, nullptr),
          "Cannot add the input port: name=in");
}

void ReportSink::connect()
{
    bt_message_iterator* upstream = nullptr;
    check(bt_message_iterator_create_from_sink_component(
              m_self, bt_self_component_sink_borrow_input_port_by_name(m_self, "in"), &upstream),
          "Cannot create the upstream message iterator: port=in");
    m_upstream.reset(upstream);
}

bt_component_class_sink_consume_method_status ReportSink::consume()
{
    if (m_is_done)
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
    bt_message_array_const messages = nullptr;
    std::uint64_t count = 0;
    Pulled pulled = Pulled::end;
    try {
        pulled = pull(m_upstream.get(), &messages, &count);
    } catch (const BtError& error) {
        if (!m_is_salvaging || error.is_memory_error())
            throw;
        keep_damage();
    }
    switch (pulled) {
    case Pulled::messages:
        break;
    case Pulled::again:
        // A live source has nothing new: the graph calls again after a pause, so that top
        // still refreshes on time.
        if (is_top_due())
            write_top_frame();
        return m_is_done ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END
                         : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
    case Pulled::end:
        m_is_done = true;
        m_upstream.reset();
        if (m_format == Format::top) {
            if (m_events || m_frames == 0)
                write_top_frame();
            if (m_damage)
                note_damage();
            finish_output();
        } else {
            write_report();
        }
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
    }
    std::uint64_t i = 0;
    try {
        for (; i < count; ++i) {
            process(messages[i]);
            bt_message_put_ref(messages[i]);
        }
    } catch (...) {
        for (; i < count; ++i)
            bt_message_put_ref(messages[i]);
        throw;
    }
    if (is_top_due())
        write_top_frame();
    return m_is_done ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END
                     : BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

bool ReportSink::is_top_due() const noexcept
{
    return m_format == Format::top && !m_is_done &&
           std::chrono::steady_clock::now() - m_last_frame >= m_period;
}

void ReportSink::write_top_frame()
{
    const analysis::Timestamp now = m_now == INT64_MIN ? 0 : m_now;
    analysis::FunctionTable after = analysis::function_snapshot(m_model, now);
    analysis::TopFrame frame;
    frame.begin = m_before_ts == INT64_MIN ? now : m_before_ts;
    frame.end = now;
    frame.events = m_events;
    frame.max_rows = m_max_rows;
    std::ostream& out = *m_out;
    if (m_is_terminal)
        out << "\x1b[H\x1b[2J"; // home, clear: each table replaces the previous one
    else if (m_frames)
        out << '\n';
    analysis::write_top(m_model, m_before, after, frame, out);
    out.flush();
    if (!out)
        throw Error("Cannot write the report: path=" + (m_path.empty() ? "stdout" : m_path) +
                    ", error=" + std::strerror(errno));
    m_before = std::move(after);
    m_before_ts = now;
    m_events = 0;
    m_last_frame = std::chrono::steady_clock::now();
    if (++m_frames == m_count && !m_is_done) {
        m_is_done = true; // enough tables: stop reading (a live source detaches)
        m_upstream.reset();
        finish_output();
    }
}

void ReportSink::finish_output()
{
    if (m_file) {
        m_file->commit();
        return;
    }
    m_out->flush();
    if (!*m_out)
        throw Error("Cannot write the report: path=stdout, error=" +
                    std::string(std::strerror(errno)));
}

void ReportSink::process(const bt_message* message)
{
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_EVENT: {
        if (!m_reader.decode(message, m_event))
            return;
        ++m_events_read;
        m_last_ts = std::max(m_last_ts, m_event.ts);
        if (m_format == Format::top) {
            m_now = std::max(m_now, m_event.ts);
            if (m_before_ts == INT64_MIN)
                m_before_ts = m_event.ts; // the first table covers the time since then
        }
        // Names count for every process (a code id may run in a forked child), and code whose
        // python:code is not in the trace (a live reader attaches mid-session, a flight
        // recorder lost it) is named by its call event until a registration comes.
        EventReader::apply_names(m_model, m_event);
        if (m_event.kind == PythonKind::process && !m_event.name.empty())
            m_commands.try_emplace(m_event.key.pid, m_event.name);
        if (m_event.kind == PythonKind::code) {
            if (m_modules)
                m_modules->on_code(m_event.id, m_event.owner);
            // The script of the process: its __main__ code's file (not "<string>" and the
            // like, code exec'd in __main__'s namespace).
            if (m_event.owner == "__main__" && !m_event.file.empty() && m_event.file[0] != '<')
                m_scripts.try_emplace(m_event.key.pid, m_event.file);
            return;
        }
        if (EventReader::apply_foreign_switch(m_model, m_event))
            return;
        if (!(m_event.key == m_last_seen))
            note_thread(message, m_event);
        if ((m_pid && *m_pid != m_event.key.pid) || (m_tid && *m_tid != m_event.key.tid)) {
            // LTTng records the switch back to a thread in the context of the task it replaces
            // (another process, swapper): it still ends the selected thread's [off-cpu].
            if (m_event.kind == PythonKind::sched_switch && m_event.next_tid > 0)
                m_model.on_switch_in(m_event.next_tid, m_event.ts);
            return;
        }
        m_has_selected = true;
        if (m_modules && is_hidden(m_event) && !is_task_root(m_event))
            return;
        if (!m_has_origin && m_chrome) {
            m_chrome->set_origin(m_event.ts);
            m_has_origin = true;
        }
        analysis::Thread& thread = EventReader::thread_of(m_model, m_event);
        EventReader::apply(m_model, thread, m_event);
        ++m_events;
        return;
    }
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
        m_reader.read_discarded(message, m_model);
        return;
    case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY: {
        // No message before this time will come: the open frames of top run until then.
        std::int64_t ns = 0;
        if (bt_clock_snapshot_get_ns_from_origin(
                bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(message), &ns) ==
            BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
            m_now = std::max(m_now, ns);
        else
            bt_current_thread_clear_error();
        return;
    }
    case BT_MESSAGE_TYPE_STREAM_END:
        m_reader.forget_stream(bt_message_stream_end_borrow_stream_const(message));
        return;
    default:
        return;
    }
}

bool ReportSink::is_hidden(const PythonEvent& event)
{
    switch (event.kind) {
    case PythonKind::call:
    case PythonKind::ret:
    case PythonKind::line:
        return !m_modules->shows_code(event.id);
    case PythonKind::c_call:
        return !m_modules->on_c_call(event.key, event.owner);
    case PythonKind::c_return:
        return !m_modules->on_c_return(event.key);
    default:
        return false;
    }
}

bool ReportSink::is_task_root(const PythonEvent& event)
{
    if (event.kind != PythonKind::call && event.kind != PythonKind::ret)
        return false;
    analysis::Thread* thread = m_model.find_thread(event.key);
    if (!thread)
        return false;
    if (event.kind == PythonKind::ret)
        return m_model.is_task_root_return(*thread, event.id);
    if (analysis::StackModel::is_task_root_call(*thread))
        return true;
    m_model.on_hidden_call(*thread, event.id);
    return false;
}

void ReportSink::note_thread(const bt_message* message, const PythonEvent& event)
{
    m_last_seen = event.key;
    m_seen[event.key.pid].insert(event.key.tid);
    if (m_procnames.count(event.key.pid))
        return;
    std::string& procname = m_procnames[event.key.pid];
    const bt_field* context =
        bt_event_borrow_common_context_field_const(bt_message_event_borrow_event_const(message));
    if (!context || bt_field_get_class_type(context) != BT_FIELD_CLASS_TYPE_STRUCTURE)
        return;
    const bt_field* field =
        bt_field_structure_borrow_member_field_by_name_const(context, "procname");
    if (field && bt_field_get_class_type(field) == BT_FIELD_CLASS_TYPE_STRING)
        procname = bt_field_string_get_value(field);
}

void ReportSink::check_selection() const
{
    if (m_has_selected || !(m_pid || m_tid) || m_damage)
        return;
    std::string asked;
    if (m_pid)
        asked += "pid=" + std::to_string(*m_pid);
    if (m_tid)
        asked += std::string(asked.empty() ? "" : " ") + "tid=" + std::to_string(*m_tid);
    if (m_seen.empty())
        throw Error("No event matches " + asked + ": the trace holds no event of any process");
    std::string held;
    std::size_t listed = 0;
    for (const auto& [pid, tids] : m_seen) {
        if (listed++ == 20) {
            held += "; and " + std::to_string(m_seen.size() - 20) + " more processes";
            break;
        }
        held += (held.empty() ? "" : "; ") + analysis::process_title(m_options, pid) +
                (tids.size() == 1 ? " with thread " : " with threads ");
        std::size_t shown = 0;
        for (const std::int64_t tid : tids) {
            if (shown++ == 10) {
                held += " and " + std::to_string(tids.size() - 10) + " more";
                break;
            }
            held += (shown > 1 ? ", " : "") + std::to_string(tid);
        }
    }
    throw Error("No event matches " + asked + ": the trace holds " + held);
}

void ReportSink::write_report()
{
    m_model.finish();
    analysis::name_processes(m_model, m_commands, m_procnames, m_scripts, m_options);
    check_selection();
    const analysis::StreamNamer stream_name = [this](std::uint64_t index) {
        return m_reader.stream_name(index);
    };
    std::ostream& out = *m_out;
    analysis::Cuts cuts;
    switch (m_format) {
    case Format::profile:
        cuts = analysis::write_profile(m_model, out, m_options);
        break;
    case Format::tree:
        cuts = analysis::write_tree(m_model, out, m_min_duration, m_options);
        break;
    case Format::folded:
        cuts = analysis::write_folded(m_model, out, m_min_duration, m_options);
        break;
    case Format::lines:
        cuts = analysis::write_lines(m_model, out, m_options);
        break;
    case Format::chrome:
        m_chrome->finish(stream_name, m_options);
        if (m_chrome->cut_frames())
            std::cerr << m_note_prefix << "note: chrome: " << m_chrome->cut_note() << '\n';
        break;
    case Format::svg:
        cuts = analysis::write_svg(m_model, out, m_min_duration, "pyust flame graph", m_options);
        break;
    case Format::tasks:
        cuts = analysis::write_tasks(m_model, out, m_min_duration, m_options);
        break;
    case Format::top:
        break; // written by write_top_frame()
    }
    if (cuts.is_cut())
        std::cerr << m_note_prefix << "note: " << format_name(m_format) << ": "
                  << analysis::cut_note(cuts, m_options) << '\n';
    const bool is_text = m_format == Format::profile || m_format == Format::tree ||
                         m_format == Format::lines || m_format == Format::tasks;
    // The incomplete parts count in a text report's size bound (what is left of it); on
    // standard error, they have one of their own.
    analysis::ReportOptions gap_options = m_options;
    if (is_text && m_options.max_bytes)
        gap_options.max_bytes -= std::min(m_options.max_bytes - 1, cuts.bytes);
    if (is_text)
        analysis::write_gaps(m_model, out, stream_name, gap_options);
    else if (m_format != Format::chrome)
        analysis::write_gaps(m_model, std::cerr, stream_name, gap_options);
    if (m_damage) {
        if (is_text)
            write_damage(out);
        note_damage();
    }
    finish_output();
}

void ReportSink::keep_damage()
{
    m_damage = take_upstream_error();
}

void ReportSink::write_damage(std::ostream& out) const
{
    out << "\nDamaged trace: " << damage_text(m_events_read, m_last_ts, *m_damage)
        << "\nNothing the trace holds after that point is in this report.\n";
}

void ReportSink::note_damage() const
{
    std::cerr << m_note_prefix
              << "warning: damaged trace: " << damage_text(m_events_read, m_last_ts, *m_damage)
              << "; nothing the trace holds after that point is in this report.\n";
}

ReportSink* sink_of(bt_self_component_sink* self) noexcept
{
    return static_cast<ReportSink*>(
        bt_self_component_get_data(bt_self_component_sink_as_self_component(self)));
}

CauseSink cause_of(bt_self_component_sink* self) noexcept
{
    return CauseSink(bt_self_component_sink_as_self_component(self));
}

} // namespace

bt_component_class_initialize_method_status initialize(bt_self_component_sink* self,
                                                       bt_self_component_sink_configuration*,
                                                       const bt_value* params, void*) noexcept
{
    return guard(cause_of(self), "Cannot initialize sink.pyust.report",
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
                     auto sink = std::make_unique<ReportSink>(self, params);
                     bt_self_component_set_data(bt_self_component_sink_as_self_component(self),
                                                sink.release());
                     return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
                 });
}

bt_component_class_sink_graph_is_configured_method_status
graph_is_configured(bt_self_component_sink* self) noexcept
{
    return guard(cause_of(self), "Cannot connect sink.pyust.report",
                 BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR,
                 BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_MEMORY_ERROR, [&] {
                     sink_of(self)->connect();
                     return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
                 });
}

bt_component_class_sink_consume_method_status consume(bt_self_component_sink* self) noexcept
{
    return guard(cause_of(self), "Cannot consume messages in sink.pyust.report",
                 BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR,
                 BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR,
                 [&] { return sink_of(self)->consume(); });
}

void finalize(bt_self_component_sink* self) noexcept
{
    delete sink_of(self);
}

} // namespace pyust::plugin::report
