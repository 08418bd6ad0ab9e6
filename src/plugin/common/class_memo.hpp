// What a component learned about each babeltrace2 class (an event class's field
// locations, a stream class's targets), read once per class: consecutive events are
// usually of one class, so the last one is kept at hand.
#pragma once

#include <unordered_map>

namespace pyust::plugin {

template <typename Class, typename Info> class ClassMemo {
public:
    // The Info of class_, read by read(class_, info) into a new, value-initialised Info the
    // first time. Whatever read throws propagates, and nothing is kept of that class (the
    // next call reads it again); std::bad_alloc. The reference stays valid for the memo's
    // lifetime.
    template <typename Read> const Info& get(const Class* class_, Read&& read)
    {
        if (class_ == m_last_class)
            return *m_last_info;
        auto [it, is_new] = m_infos.try_emplace(class_);
        if (is_new) {
            try {
                read(class_, it->second);
            } catch (...) {
                m_infos.erase(it);
                throw;
            }
        }
        m_last_class = class_;
        m_last_info = &it->second;
        return it->second;
    }

private:
    std::unordered_map<const Class*, Info> m_infos;
    const Class* m_last_class = nullptr;
    const Info* m_last_info = nullptr;
};

} // namespace pyust::plugin
