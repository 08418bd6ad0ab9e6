// sink.pyust.report (see report.hpp): parameters, consumption and the bridges.
#include "report.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "bt_util.hpp"
#include "event_reader.hpp"
#include "module_filter.hpp"
#include "params.hpp"
#include "reports.hpp"
#include "stack_model.hpp"

namespace pyust::plugin::report {

namespace {

enum class Format { profile, tree, folded, lines, chrome, svg };

Format parse_format(const std::string& text)
{
    static constexpr struct {
        const char* name;
        Format format;
    } formats[] = {
        {"profile", Format::profile}, {"tree", Format::tree},     {"folded", Format::folded},
        {"lines", Format::lines},     {"chrome", Format::chrome}, {"svg", Format::svg},
    };
    for (const auto& entry : formats)
        if (text == entry.name)
            return entry.format;
    throw Error("bad parameter value: name=format, value=" + text +
                ", expected=profile|tree|folded|lines|chrome|svg");
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
    void write_report();

    bt_self_component_sink* m_self;
    Format m_format = Format::profile;
    std::string m_path;
    std::ofstream m_file;
    std::ostream* m_out = &std::cout;
    std::optional<std::int64_t> m_pid, m_tid;
    std::optional<analysis::ModuleFilter> m_modules;
    analysis::Timestamp m_min_duration = 0;
    MessageIteratorRef m_upstream;
    EventReader m_reader;
    analysis::StackModel m_model;
    PythonEvent m_event;
    std::unique_ptr<analysis::ChromeWriter> m_chrome;
    bool m_has_origin = false;
    bool m_is_done = false;
};

ReportSink::ReportSink(bt_self_component_sink* self, const bt_value* params) : m_self(self)
{
    check_known_params(
        params, {"format", "output", "pid", "tid", "begin", "end", "min-duration", "modules"});
    if (const auto format = string_param(params, "format"))
        m_format = parse_format(*format);
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
        m_file.open(m_path, std::ios::out | std::ios::trunc | std::ios::binary);
        if (!m_file)
            throw Error("Cannot open the output file: path=" + m_path +
                        ", error=" + std::strerror(errno));
        m_out = &m_file;
    }
    if (m_format == Format::chrome) {
        m_chrome = std::make_unique<analysis::ChromeWriter>(m_model, *m_out, m_min_duration);
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
    switch (pull(m_upstream.get(), &messages, &count)) {
    case Pulled::messages:
        break;
    case Pulled::again:
        return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN;
    case Pulled::end:
        m_is_done = true;
        m_upstream.reset();
        write_report();
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
    return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

void ReportSink::process(const bt_message* message)
{
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_EVENT: {
        if (!m_reader.decode(message, m_event))
            return;
        if (m_event.kind == PythonKind::code) {
            // Names count for every process: a code id may run in a forked child.
            m_model.on_code(m_event.id, std::string(m_event.owner), std::string(m_event.name),
                            std::string(m_event.file), static_cast<std::uint32_t>(m_event.number));
            if (m_modules)
                m_modules->on_code(m_event.id, m_event.owner);
            return;
        }
        if ((m_pid && *m_pid != m_event.key.pid) || (m_tid && *m_tid != m_event.key.tid))
            return;
        if (m_modules && is_hidden(m_event))
            return;
        if (!m_has_origin && m_chrome) {
            m_chrome->set_origin(m_event.ts);
            m_has_origin = true;
        }
        analysis::Thread& thread = m_model.thread_at(m_event.key, m_event.ts, m_event.stream);
        EventReader::apply(m_model, thread, m_event);
        return;
    }
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
        m_reader.read_discarded(message, m_model);
        return;
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

void ReportSink::write_report()
{
    m_model.finish();
    const analysis::StreamNamer stream_name = [this](std::uint64_t index) {
        return m_reader.stream_name(index);
    };
    std::ostream& out = *m_out;
    switch (m_format) {
    case Format::profile:
        analysis::write_profile(m_model, out);
        break;
    case Format::tree:
        analysis::write_tree(m_model, out, m_min_duration);
        break;
    case Format::folded:
        analysis::write_folded(m_model, out, m_min_duration);
        break;
    case Format::lines:
        analysis::write_lines(m_model, out);
        break;
    case Format::chrome:
        m_chrome->finish(stream_name);
        break;
    case Format::svg:
        analysis::write_svg(m_model, out, m_min_duration, "pyust flame graph");
        break;
    }
    if (m_format == Format::profile || m_format == Format::tree || m_format == Format::lines)
        analysis::write_gaps(m_model, out, stream_name);
    else if (m_format != Format::chrome)
        analysis::write_gaps(m_model, std::cerr, stream_name);
    out.flush();
    if (!out)
        throw Error("Cannot write the report: path=" + (m_path.empty() ? "stdout" : m_path) +
                    ", error=" + std::strerror(errno));
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
