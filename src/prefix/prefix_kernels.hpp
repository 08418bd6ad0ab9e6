// Internal to src/prefix: the plain data a PrefixTable hands to its lookup kernels, and the
// kernels' entry points. The AVX2 kernel is compiled with -mavx2, so this header holds nothing
// the compiler could emit there and the linker then pick for scalar code (no inline functions,
// no templates, no standard library beyond the C integer types).
//
// The layout. Entries are stored in search order: longest first, equal lengths in the order
// given, so the first entry that matches is the longest match. Every 16 entries form a block
// whose filter bytes (one byte per entry and property) fill one 128-bit lane; two blocks form a
// group, one 256-bit AVX2 compare per property. A table has as many groups as it needs, so it
// has no size limit; the lanes past the last entry hold filter bytes that never pass.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pyust::prefix::kernel {

constexpr std::size_t block_size = 16; // entries per block: one 128-bit lane of filter bytes
constexpr std::size_t group_size = 32; // entries per group: two blocks, one 256-bit register
constexpr std::size_t head_size = 16;  // bytes of each entry kept zero-padded for SIMD compares

// pshufb turns an index with its high bit set into a zero byte; positions use it for "none".
constexpr std::uint8_t no_position = 0x80;

// The filter bytes of one group. An entry of length L is a candidate for a name of size S only
// if all three tests pass (each one is necessary for a match, so none rejects a true match):
// - len: min(L, 255) <= min(S, 255), compared unsigned;
// - pos/ch: name[pos] == ch, where pos < min(L, 16) is the entry's most distinguishing byte
//   among the table's entries; pos == no_position and ch == 0 for the empty entry (the zero
//   byte always equals ch), and ch == 1 for unused lanes (it never does);
// - bound: for 0 < L < 16, the byte the name has at L, read from the name's first 16 bytes
//   zero-padded, is '.' or 0 (the name ends there); no_position otherwise (reads 0: passes).
struct alignas(32) Group {
    std::uint8_t pos[group_size];
    std::uint8_t ch[group_size];
    std::uint8_t len[group_size];
    std::uint8_t bound[group_size];
};

// A table as the kernels see it. Every array has count entries (groups: group_count), in search
// order; the storage belongs to the PrefixTable.
struct TableView {
    const Group* groups;
    std::size_t group_count;    // ceil(count / group_size)
    std::size_t count;          // entries
    const std::uint8_t* heads;  // head_size bytes per entry: its first bytes, zero-padded
    const std::size_t* lengths; // each entry's length
    const char* const* texts;   // each entry's bytes (lengths[i] of them, no terminator read)
    const std::int32_t* index;  // each entry's index in the list the table was built from
};

} // namespace pyust::prefix::kernel

// Each kernel returns the index (TableView::index) of the first entry in search order that
// matches name[0, size), or -1. Precondition: name points to size readable bytes (it may be null
// when size is 0). noexcept.
namespace pyust::prefix::scalar {
std::int32_t find(const kernel::TableView& table, const char* name, std::size_t size) noexcept;
}

namespace pyust::prefix::avx2 {
// Precondition, on top of the above: the CPU has AVX2, BMI1 and BMI2.
std::int32_t find(const kernel::TableView& table, const char* name, std::size_t size) noexcept;
} // namespace pyust::prefix::avx2
