// The AVX2 lookup kernel of the prefix table. This translation unit alone is compiled with
// -mavx2 -mbmi -mbmi2 and is only called once the CPU is known to have them, so it holds plain
// data and intrinsics only: any inline function or template instantiated here could be picked by
// the linker for the scalar code too and leak AVX2 into it.
//
// Per group of 32 entries: three vector tests (length, distinguishing byte, boundary byte; see
// prefix_kernels.hpp) give a bit mask of candidates, and only those get a full compare, first of
// their 16 head bytes in a register, then of the rest 16 bytes at a time.
#include "prefix/prefix_kernels.hpp"

#include <immintrin.h>

namespace pyust::prefix::avx2 {

namespace {

using kernel::group_size;
using kernel::head_size;

// The smallest page size Linux uses on x86; huge pages are multiples of it, so a load that does
// not cross a 4 KiB boundary does not cross any page boundary.
constexpr std::uintptr_t page_size = 4096;

// keep_mask + 16 - n: n bytes of 0xFF, then zeros.
alignas(32) constexpr std::uint8_t keep_mask[32] = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
};

// shift_index + k, as pshufb indices: lane i takes byte k + i, or zero once k + i reaches 16.
alignas(32) constexpr std::uint8_t shift_index[32] = {
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

__m128i load_unaligned(const void* p) noexcept
{
    return _mm_loadu_si128(static_cast<const __m128i*>(p));
}

__m256i load_group_row(const std::uint8_t* row) noexcept
{
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(row));
}

// The name's first min(size, 16) bytes, zero after, with one 16-byte load from the name's start
// (one predictable branch for names of any size) unless that load would cross into a page the
// name does not touch: then the name is shorter than 16 bytes and starts in the last 15 bytes of
// a page, so the 16 bytes that end where it ends are all in pages it touches; they are loaded and
// shifted into place. Both loads read bytes around the name inside its pages, which
// AddressSanitizer would report.
__attribute__((no_sanitize_address)) __m128i load_head(const char* name, std::size_t size) noexcept
{
    if (size == 0) // name may be null
        return _mm_setzero_si128();
    const std::size_t kept = size < head_size ? size : head_size;
    const std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(name) % page_size;
    if (offset <= page_size - head_size || size >= head_size)
        return _mm_and_si128(load_unaligned(name), load_unaligned(keep_mask + head_size - kept));
    // Integer arithmetic: the address lies before the name, outside any object it points into.
    const std::uintptr_t tail_start = reinterpret_cast<std::uintptr_t>(name) + size - head_size;
    const __m128i tail = load_unaligned(reinterpret_cast<const void*>(tail_start));
    return _mm_shuffle_epi8(tail, load_unaligned(shift_index + head_size - size));
}

// Whether a[0, n) equals b[0, n), given n > 16 and that the first 16 bytes are equal: 16 bytes at
// a time, the last load ending at n, so no byte outside either range is read. No call to memcmp:
// a call would make the kernel save its vector registers on every lookup, not just on this one.
bool equal_after_head(const char* a, const char* b, std::size_t n) noexcept
{
    const auto equal16 = [a, b](std::size_t at) {
        const __m128i x = load_unaligned(a + at);
        return _mm_movemask_epi8(_mm_cmpeq_epi8(x, load_unaligned(b + at))) == 0xFFFF;
    };
    for (std::size_t at = head_size; at + head_size < n; at += head_size)
        if (!equal16(at))
            return false;
    return equal16(n - head_size);
}

// Whether the candidate entry really matches: its length, its head bytes, the boundary, then the
// bytes past the head. Reads only the entry's own length of its text, and only name bytes below
// size.
bool confirm(const kernel::TableView& table, std::size_t entry, const char* name, std::size_t size,
             __m128i head) noexcept
{
    const std::size_t length = table.lengths[entry];
    if (length > size) // possible past 255 bytes, where the filter's lengths saturate
        return false;
    if (length == 0)
        return true;
    const __m128i stored = load_unaligned(table.heads + entry * head_size);
    const auto equal = static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(stored, head)));
    const std::uint32_t needed = length >= head_size ? 0xFFFFu : (1u << length) - 1u;
    if ((equal & needed) != needed)
        return false;
    if (length < size && name[length] != '.')
        return false;
    return length <= head_size || equal_after_head(name, table.texts[entry], length);
}

} // namespace

std::int32_t find(const kernel::TableView& table, const char* name, std::size_t size) noexcept
{
    const __m128i head = load_head(name, size);
    const __m256i name_bytes = _mm256_broadcastsi128_si256(head);
    const __m256i name_size = _mm256_set1_epi8(static_cast<char>(size < 255 ? size : 255));
    const __m256i dot = _mm256_set1_epi8('.');
    const __m256i zero = _mm256_setzero_si256();

    for (std::size_t g = 0; g < table.group_count; ++g) {
        const kernel::Group& group = table.groups[g];
        const __m256i len = load_group_row(group.len);
        const __m256i len_ok = _mm256_cmpeq_epi8(_mm256_min_epu8(len, name_size), len);
        const __m256i at_pos = _mm256_shuffle_epi8(name_bytes, load_group_row(group.pos));
        const __m256i ch_ok = _mm256_cmpeq_epi8(at_pos, load_group_row(group.ch));
        const __m256i at_bound = _mm256_shuffle_epi8(name_bytes, load_group_row(group.bound));
        const __m256i bound_ok =
            _mm256_or_si256(_mm256_cmpeq_epi8(at_bound, dot), _mm256_cmpeq_epi8(at_bound, zero));
        const __m256i ok = _mm256_and_si256(_mm256_and_si256(len_ok, ch_ok), bound_ok);
        auto candidates = static_cast<std::uint32_t>(_mm256_movemask_epi8(ok));
        while (candidates != 0) {
            const std::size_t entry = g * group_size + _tzcnt_u32(candidates);
            if (confirm(table, entry, name, size, head))
                return table.index[entry];
            candidates = _blsr_u32(candidates);
        }
    }
    return -1;
}

} // namespace pyust::prefix::avx2
