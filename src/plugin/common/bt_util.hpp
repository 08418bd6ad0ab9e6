// What every pyust component shares at the libbabeltrace2 boundary: owning references to
// babeltrace2 objects, the plugin's exception types, and the one guard that each C callback's
// noexcept bridge uses to turn exceptions into status codes and error causes.
#pragma once

#include <babeltrace2/babeltrace.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace pyust::plugin {

// An error inside a component. Its text reads "Cannot X: key=value, ..." and becomes the error
// cause the bridge appends.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A libbabeltrace2 function failed (it has appended its own cause already). Throwing it
// appends ours on top, with what we were doing.
class BtError : public Error {
public:
    // Precondition: what says what failed. Throws std::bad_alloc.
    BtError(const std::string& what, bool is_memory_error)
        : Error(what), m_is_memory_error(is_memory_error)
    {
    }
    bool is_memory_error() const noexcept { return m_is_memory_error; }

private:
    bool m_is_memory_error;
};

// Throws BtError(what) when a babeltrace2 function that returns a status did not return 0 (the
// value of every *_STATUS_OK). Precondition: what is a complete "Cannot X: ..." sentence.
template <typename Status> void check(Status status, const char* what)
{
    if (static_cast<int>(status) != 0)
        throw BtError(what, static_cast<int>(status) == -12 /* __BT_FUNC_STATUS_MEMORY_ERROR */);
}

// Throws BtError(what) when a babeltrace2 constructor returned NULL (out of memory).
template <typename T> T* check_new(T* object, const char* what)
{
    if (!object)
        throw BtError(what, true);
    return object;
}

// An owned reference to a babeltrace2 object, released with PutRef.
template <typename T, void (*PutRef)(const T*)> class Ref {
public:
    Ref() noexcept = default;
    // Takes over one reference (may be nullptr). noexcept.
    explicit Ref(T* object) noexcept : m_object(object) {}
    Ref(Ref&& other) noexcept : m_object(std::exchange(other.m_object, nullptr)) {}
    Ref& operator=(Ref&& other) noexcept
    {
        reset(std::exchange(other.m_object, nullptr));
        return *this;
    }
    Ref(const Ref&) = delete;
    Ref& operator=(const Ref&) = delete;
    ~Ref() { reset(); }

    T* get() const noexcept { return m_object; }
    explicit operator bool() const noexcept { return m_object != nullptr; }
    // Gives the reference away (to a message array, say). noexcept.
    T* release() noexcept { return std::exchange(m_object, nullptr); }
    // Releases the current reference and takes over object's. noexcept.
    void reset(T* object = nullptr) noexcept
    {
        if (m_object)
            PutRef(m_object);
        m_object = object;
    }

private:
    T* m_object = nullptr;
};

using MessageRef = Ref<const bt_message, bt_message_put_ref>;
using MessageIteratorRef = Ref<bt_message_iterator, bt_message_iterator_put_ref>;
using TraceClassRef = Ref<bt_trace_class, bt_trace_class_put_ref>;
using TraceRef = Ref<bt_trace, bt_trace_put_ref>;
using StreamRef = Ref<bt_stream, bt_stream_put_ref>;
using ClockClassRef = Ref<bt_clock_class, bt_clock_class_put_ref>;
using FieldClassRef = Ref<bt_field_class, bt_field_class_put_ref>;

// The outcome of pull(): messages, none for now (try again), or no more.
enum class Pulled { messages, again, end };

// Gets the next batch of upstream messages (the caller then owns each reference). Throws
// BtError when the upstream iterator fails.
inline Pulled pull(bt_message_iterator* upstream, bt_message_array_const* messages,
                   std::uint64_t* count)
{
    switch (bt_message_iterator_next(upstream, messages, count)) {
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
        return Pulled::messages;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
        return Pulled::again;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
        return Pulled::end;
    case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
        throw BtError("Cannot get messages from upstream: port=in", true);
    default:
        throw BtError("Cannot get messages from upstream: port=in", false);
    }
}

// Where an error cause goes: the component or message iterator running the callback.
class CauseSink {
public:
    explicit CauseSink(bt_self_component* component) noexcept : m_component(component) {}
    explicit CauseSink(bt_self_message_iterator* iterator) noexcept : m_iterator(iterator) {}

    // Appends "<action>: <reason>" as an error cause of the current thread. noexcept.
    void append(const char* action, const char* reason) const noexcept
    {
        if (m_iterator)
            BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_MESSAGE_ITERATOR(m_iterator, "%s: %s", action,
                                                                       reason);
        else
            BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(m_component, "%s: %s", action,
                                                                reason);
    }

private:
    bt_self_component* m_component = nullptr;
    bt_self_message_iterator* m_iterator = nullptr;
};

// Runs body (which returns a Status) for a C callback and converts whatever it throws: out of
// memory gives memory_error, anything else error, each with an error cause "<action>: <what>".
// action reads "Cannot X" ("Cannot initialize sink.pyust.report"). noexcept.
template <typename Status, typename Body>
Status guard(const CauseSink& cause, const char* action, Status error, Status memory_error,
             Body&& body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc&) {
        cause.append(action, "out of memory");
        return memory_error;
    } catch (const BtError& e) {
        cause.append(action, e.what());
        return e.is_memory_error() ? memory_error : error;
    } catch (const std::exception& e) {
        cause.append(action, e.what());
        return error;
    } catch (...) {
        cause.append(action, "unknown exception");
        return error;
    }
}

} // namespace pyust::plugin
