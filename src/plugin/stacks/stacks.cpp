// filter.pyust.stacks (see stacks.hpp): the message iterator and its bridges.
#include "plugin/stacks/stacks.hpp"

#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

#include "analysis/stack_model.hpp"
#include "plugin/common/bt_util.hpp"
#include "plugin/common/event_reader.hpp"
#include "plugin/common/filter_util.hpp"
#include "plugin/common/params.hpp"

namespace pyust::plugin::stacks {

namespace {

using analysis::FrameId;
using analysis::FrameIdHash;

// Makes a clock class of ours that means the same as an upstream one, so that the companion
// events' raw clock values are the upstream ones and correlate exactly with them: the same
// frequency, offset, origin and identity. How a clock class says its identity and its optional
// properties depends on the graph's MIP version (common/mip.hpp).
ClockClassRef copy_clock_class(bt_self_component* self, const bt_clock_class* upstream)
{
    ClockClassRef clock(check_new(bt_clock_class_create(self), "Cannot create a clock class"));
    bt_clock_class_set_frequency(clock.get(), bt_clock_class_get_frequency(upstream));
    std::int64_t seconds = 0;
    std::uint64_t cycles = 0;
    bt_clock_class_get_offset(upstream, &seconds, &cycles);
    bt_clock_class_set_offset(clock.get(), seconds, cycles);
    if (const char* name = bt_clock_class_get_name(upstream))
        check(bt_clock_class_set_name(clock.get(), name), "Cannot name a clock class");
    if (const char* description = bt_clock_class_get_description(upstream))
        check(bt_clock_class_set_description(clock.get(), description),
              "Cannot describe a clock class");
#if PYUST_BT_HAS_MIP1
    if (bt_self_component_get_graph_mip_version(self) >= 1) {
        // MIP 1: precision and accuracy may be unknown; identity is namespace, name and UID;
        // the origin is unknown, the Unix epoch, or a custom one with an identity of its own.
        std::uint64_t value = 0;
        if (bt_clock_class_get_opt_precision(upstream, &value) ==
            BT_PROPERTY_AVAILABILITY_AVAILABLE)
            bt_clock_class_set_precision(clock.get(), value);
        if (bt_clock_class_get_accuracy(upstream, &value) == BT_PROPERTY_AVAILABILITY_AVAILABLE)
            bt_clock_class_set_accuracy(clock.get(), value);
        if (bt_clock_class_origin_is_unix_epoch(upstream))
            bt_clock_class_set_origin_unix_epoch(clock.get());
        else if (!bt_clock_class_origin_is_known(upstream))
            bt_clock_class_set_origin_unknown(clock.get());
        else
            check(bt_clock_class_set_origin(clock.get(),
                                            bt_clock_class_get_origin_namespace(upstream),
                                            bt_clock_class_get_origin_name(upstream),
                                            bt_clock_class_get_origin_uid(upstream)),
                  "Cannot set a clock class's origin");
        if (const char* ns = bt_clock_class_get_namespace(upstream))
            check(bt_clock_class_set_namespace(clock.get(), ns),
                  "Cannot set a clock class's namespace");
        if (const char* uid = bt_clock_class_get_uid(upstream))
            check(bt_clock_class_set_uid(clock.get(), uid), "Cannot set a clock class's UID");
        return clock;
    }
#endif
    // MIP 0: a precision always, the Unix epoch or an unknown origin, a UUID as identity.
    bt_clock_class_set_precision(clock.get(), bt_clock_class_get_precision(upstream));
    bt_clock_class_set_origin_is_unix_epoch(clock.get(),
                                            bt_clock_class_origin_is_unix_epoch(upstream));
    if (bt_uuid uuid = bt_clock_class_get_uuid(upstream))
        bt_clock_class_set_uuid(clock.get(), uuid);
    return clock;
}

// The companion stream class (and its one event class) for upstream streams with a given
// default clock class (or none).
struct CompanionClass {
    bt_stream_class* stream_class = nullptr; // owned by the trace class
    bt_event_class* event_class = nullptr;   // owned by the stream class
};

// What we create for one upstream trace class.
struct OutTraceClass {
    TraceClassRef trace_class;
    std::unordered_map<const bt_clock_class*, CompanionClass> classes;
};

struct Companion {
    StreamRef stream;
    bt_event_class* event_class = nullptr;
    bool has_clock = false;
};

class StacksIterator {
public:
    // Creates the upstream iterator. Throws BtError, std::bad_alloc.
    explicit StacksIterator(bt_self_message_iterator* self);
    ~StacksIterator();

    // Fills messages with up to capacity messages. Throws Error, BtError, std::bad_alloc.
    bt_message_iterator_class_next_method_status next(bt_message_array_const messages,
                                                      std::uint64_t capacity, std::uint64_t* count);

private:
    void process(const bt_message* message);
    // Queues the stack event of message, showing the thread's depth outermost frames
    // ("<unmatched>" for a return without an open frame: depth 0).
    void annotate(const bt_message* message, std::size_t depth, const analysis::Thread& thread);
    Companion& companion(const bt_stream* upstream);
    CompanionClass& companion_class(const bt_stream* upstream);
    bt_trace* out_trace(const bt_trace* upstream, bt_trace_class* trace_class);
    const std::string& label(FrameId id);
    void end_companion(const bt_stream* upstream);
    void push(const bt_message* message) { m_queue.push_back(message); }

    bt_self_message_iterator* m_self;
    bt_self_component* m_component;
    MessageIteratorRef m_upstream;
    std::deque<const bt_message*> m_queue; // owned references, in output order
    bool m_is_upstream_ended = false;
    EventReader m_reader;
    analysis::StackModel m_model;
    PythonEvent m_event;
    std::string m_stack;
    std::unordered_map<FrameId, std::string, FrameIdHash> m_labels;
    std::unordered_map<const bt_trace_class*, OutTraceClass> m_trace_classes;
    std::unordered_map<const bt_trace*, TraceRef> m_traces;
    std::unordered_map<const bt_stream*, Companion> m_companions;
};

StacksIterator::StacksIterator(bt_self_message_iterator* self)
    : m_self(self), m_component(bt_self_message_iterator_borrow_component(self)),
      m_upstream(create_upstream(self))
{
    m_model.set_raw_native_names(bt_self_component_get_data(m_component) != nullptr);
}

StacksIterator::~StacksIterator()
{
    for (const bt_message* message : m_queue)
        bt_message_put_ref(message);
}

bt_message_iterator_class_next_method_status
StacksIterator::next(bt_message_array_const messages, std::uint64_t capacity, std::uint64_t* count)
{
    while (m_queue.empty()) {
        if (m_is_upstream_ended)
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
        bt_message_array_const upstream_messages = nullptr;
        std::uint64_t upstream_count = 0;
        switch (pull(m_upstream.get(), &upstream_messages, &upstream_count)) {
        case Pulled::messages:
            take_each(upstream_messages, upstream_count, [this](const bt_message* message) {
                push(message);
                process(message);
            });
            break;
        case Pulled::again:
            return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_AGAIN;
        case Pulled::end:
            m_is_upstream_ended = true;
            while (!m_companions.empty())
                end_companion(m_companions.begin()->first);
            break;
        }
    }
    std::uint64_t n = 0;
    while (n < capacity && !m_queue.empty()) {
        messages[n++] = m_queue.front();
        m_queue.pop_front();
    }
    *count = n;
    return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
}

void StacksIterator::process(const bt_message* message)
{
    switch (bt_message_get_type(message)) {
    case BT_MESSAGE_TYPE_EVENT: {
        if (!m_reader.decode(message, m_event))
            return;
        if (EventReader::apply_names(m_model, m_event))
            m_labels.clear(); // a registration may rename a cached label
        if (EventReader::apply_foreign_switch(m_model, m_event))
            return; // another task's: no stack of ours to show
        analysis::Thread& thread = EventReader::thread_of(m_model, m_event);
        // A return shows the stack it leaves (the returning frame innermost), or
        // "<unmatched>" when no open frame matches it (called before the trace started, or its
        // call was lost); every other event shows the stack after it.
        if (m_event.kind == PythonKind::ret) {
            annotate(message, thread.open_depth(m_event.id), thread);
            EventReader::apply(m_model, thread, m_event);
        } else if (m_event.kind == PythonKind::c_return) {
            const bool is_open = thread.depth() > 0 && thread.frames().back().id.is_c &&
                                 !thread.frames().back().id.is_native;
            annotate(message, is_open ? thread.depth() : 0, thread);
            EventReader::apply(m_model, thread, m_event);
        } else {
            EventReader::apply(m_model, thread, m_event);
            annotate(message, thread.depth(), thread);
        }
        return;
    }
    case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
        m_reader.read_discarded(message, m_model);
        return;
    case BT_MESSAGE_TYPE_STREAM_END: {
        const bt_stream* stream = bt_message_stream_end_borrow_stream_const(message);
        if (m_companions.count(stream)) {
            // Our stream ends just before the upstream one.
            m_queue.pop_back();
            try {
                end_companion(stream);
            } catch (...) {
                push(message);
                throw;
            }
            push(message);
        }
        m_reader.forget_stream(stream);
        return;
    }
    default:
        return;
    }
}

const std::string& StacksIterator::label(FrameId id)
{
    auto it = m_labels.find(id);
    if (it == m_labels.end())
        it = m_labels.emplace(id, m_model.label(id)).first;
    return it->second;
}

void StacksIterator::annotate(const bt_message* message, std::size_t depth,
                              const analysis::Thread& thread)
{
    const bt_event* upstream_event = bt_message_event_borrow_event_const(message);
    Companion& out = companion(bt_event_borrow_stream_const(upstream_event));
    m_stack.clear();
    const auto& frames = thread.frames();
    for (std::size_t i = 0; i < depth; ++i) {
        if (i > 0)
            m_stack.push_back(';');
        m_stack += label(frames[i].id);
    }
    const bool is_return = m_event.kind == PythonKind::ret || m_event.kind == PythonKind::c_return;
    if (depth == 0 && is_return)
        m_stack = "<unmatched>";
    bt_message* created =
        out.has_clock ? bt_message_event_create_with_default_clock_snapshot(
                            m_self, out.event_class, out.stream.get(),
                            bt_clock_snapshot_get_value(
                                bt_message_event_borrow_default_clock_snapshot_const(message)))
                      : bt_message_event_create(m_self, out.event_class, out.stream.get());
    MessageRef stack_message(check_new(created, "Cannot create a stack event message"));
    bt_field* payload = bt_event_borrow_payload_field(bt_message_event_borrow_event(created));
    bt_field_integer_unsigned_set_value(bt_field_structure_borrow_member_field_by_index(payload, 0),
                                        depth);
    check(bt_field_string_set_value(bt_field_structure_borrow_member_field_by_index(payload, 1),
                                    m_stack.c_str()),
          "Cannot set the stack field of a stack event");
    push(stack_message.release());
}

CompanionClass& StacksIterator::companion_class(const bt_stream* upstream)
{
    const bt_stream_class* upstream_class = bt_stream_borrow_class_const(upstream);
    const bt_trace_class* upstream_trace_class =
        bt_stream_class_borrow_trace_class_const(upstream_class);
    OutTraceClass& out = m_trace_classes[upstream_trace_class];
    if (!out.trace_class)
        out.trace_class.reset(check_new(bt_trace_class_create(m_component),
                                        "Cannot create the stack events' trace class"));
    const bt_clock_class* upstream_clock =
        bt_stream_class_borrow_default_clock_class_const(upstream_class);
    CompanionClass& result = out.classes[upstream_clock];
    if (result.event_class)
        return result;

    bt_stream_class* stream_class = check_new(bt_stream_class_create(out.trace_class.get()),
                                              "Cannot create the stack events' stream class");
    result.stream_class = stream_class;
    check(bt_stream_class_set_name(stream_class, "pyust-stacks"),
          "Cannot name the stack events' stream class");
    if (upstream_clock) {
        ClockClassRef clock = copy_clock_class(m_component, upstream_clock);
        check(bt_stream_class_set_default_clock_class(stream_class, clock.get()),
              "Cannot set the stack events' clock class");
    }
    bt_event_class* event_class =
        check_new(bt_event_class_create(stream_class), "Cannot create the pyust:stack event class");
    check(bt_event_class_set_name(event_class, "pyust:stack"),
          "Cannot name the pyust:stack event class");
    bt_trace_class* trace_class = out.trace_class.get();
    FieldClassRef payload(check_new(bt_field_class_structure_create(trace_class),
                                    "Cannot create the pyust:stack payload"));
    FieldClassRef depth(check_new(bt_field_class_integer_unsigned_create(trace_class),
                                  "Cannot create the pyust:stack depth field"));
    FieldClassRef stack(check_new(bt_field_class_string_create(trace_class),
                                  "Cannot create the pyust:stack stack field"));
    check(bt_field_class_structure_append_member(payload.get(), "depth", depth.get()),
          "Cannot add the depth field to pyust:stack");
    check(bt_field_class_structure_append_member(payload.get(), "stack", stack.get()),
          "Cannot add the stack field to pyust:stack");
    check(bt_event_class_set_payload_field_class(event_class, payload.get()),
          "Cannot set the pyust:stack payload");
    result.event_class = event_class;
    return result;
}

bt_trace* StacksIterator::out_trace(const bt_trace* upstream, bt_trace_class* trace_class)
{
    TraceRef& out = m_traces[upstream];
    if (out)
        return out.get();
    out.reset(check_new(bt_trace_create(trace_class), "Cannot create the stack events' trace"));
    if (const char* name = bt_trace_get_name(upstream))
        check(bt_trace_set_name(out.get(), name), "Cannot name the stack events' trace");
    // The same environment (hostname, tracer, ...), so that sinks print the same context.
    const std::uint64_t count = bt_trace_get_environment_entry_count(upstream);
    for (std::uint64_t i = 0; i < count; ++i) {
        const char* name = nullptr;
        const bt_value* value = nullptr;
        bt_trace_borrow_environment_entry_by_index_const(upstream, i, &name, &value);
        if (bt_value_is_signed_integer(value))
            check(bt_trace_set_environment_entry_integer(out.get(), name,
                                                         bt_value_integer_signed_get(value)),
                  "Cannot copy a trace environment entry");
        else if (bt_value_is_string(value))
            check(
                bt_trace_set_environment_entry_string(out.get(), name, bt_value_string_get(value)),
                "Cannot copy a trace environment entry");
    }
    return out.get();
}

Companion& StacksIterator::companion(const bt_stream* upstream)
{
    auto it = m_companions.find(upstream);
    if (it != m_companions.end())
        return it->second;
    CompanionClass& classes = companion_class(upstream);
    bt_trace* trace = out_trace(bt_stream_borrow_trace_const(upstream),
                                bt_stream_class_borrow_trace_class(classes.stream_class));
    StreamRef stream(check_new(bt_stream_create(classes.stream_class, trace),
                               "Cannot create a stack events' stream"));
    const char* upstream_name = bt_stream_get_name(upstream);
    const std::string name =
        std::string("pyust stacks of ") +
        (upstream_name ? upstream_name : "stream " + std::to_string(bt_stream_get_id(upstream)));
    check(bt_stream_set_name(stream.get(), name.c_str()), "Cannot name a stack events' stream");
    MessageRef beginning(check_new(bt_message_stream_beginning_create(m_self, stream.get()),
                                   "Cannot create a stream beginning message"));
    Companion companion;
    companion.stream = std::move(stream);
    companion.event_class = classes.event_class;
    companion.has_clock = bt_stream_class_borrow_default_clock_class(classes.stream_class);
    it = m_companions.emplace(upstream, std::move(companion)).first;
    push(beginning.release());
    return it->second;
}

void StacksIterator::end_companion(const bt_stream* upstream)
{
    const auto it = m_companions.find(upstream);
    MessageRef end(check_new(bt_message_stream_end_create(m_self, it->second.stream.get()),
                             "Cannot create a stream end message"));
    m_companions.erase(it);
    push(end.release());
}

} // namespace

bt_component_class_initialize_method_status initialize(bt_self_component_filter* self,
                                                       bt_self_component_filter_configuration*,
                                                       const bt_value* params, void*) noexcept
{
    const CauseSink cause(bt_self_component_filter_as_self_component(self));
    return guard(cause, "Cannot initialize filter.pyust.stacks",
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR,
                 BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR, [&] {
                     check_known_params(params, {"raw-names"});
                     // The component's data says raw-names=yes: no allocation to free.
                     static bool raw_names = true;
                     if (bool_param(params, "raw-names").value_or(false))
                         bt_self_component_set_data(
                             bt_self_component_filter_as_self_component(self), &raw_names);
                     add_filter_ports(self);
                     return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
                 });
}

bt_message_iterator_class_initialize_method_status
iterator_initialize(bt_self_message_iterator* self, bt_self_message_iterator_configuration*,
                    bt_self_component_port_output*) noexcept
{
    return iterator_initialize_bridge<StacksIterator>(
        self, "Cannot initialize the message iterator of filter.pyust.stacks",
        [&] { return new StacksIterator(self); });
}

bt_message_iterator_class_next_method_status iterator_next(bt_self_message_iterator* self,
                                                           bt_message_array_const messages,
                                                           uint64_t capacity,
                                                           uint64_t* count) noexcept
{
    return next_bridge<StacksIterator>(self, messages, capacity, count,
                                       "Cannot get the next messages of filter.pyust.stacks");
}

void iterator_finalize(bt_self_message_iterator* self) noexcept
{
    iterator_finalize_bridge<StacksIterator>(self);
}

} // namespace pyust::plugin::stacks
