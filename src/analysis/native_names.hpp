// The names native frames get in pyust's outputs: what a Python user reads instead of the
// symbol a compiler wrote. Plain C++, unit-tested on its own.
#pragma once

#include <string>
#include <string_view>

namespace pyust::analysis {

// The readable name of a native function's symbol (without debug-info's "+offset"):
// - GCC's pieces and clones are named after their function: "foo.cold", "foo.part.0",
//   "foo.constprop.0.isra.0" and "foo.lto_priv.0" read "foo";
// - C++ symbols are demangled ("_ZN2ns3fooEi" reads "ns::foo(int)");
// - Cython's C functions read as the Python names they implement: its Python wrappers, their
//   implementations, its cdef/cpdef functions and generator bodies
//   (__pyx_pw_3nat_1cy_entry, __pyx_pf_3nat_cy_entry, __pyx_f_3nat_3Bar_fast,
//   __pyx_gb_3nat_6generator) read "nat.cy_entry", "nat.cy_entry", "nat.Bar.fast",
//   "nat.generator"; a lambda reads "<lambda>" ("nat.gen.<lambda>"); a cdef class's
//   __pyx_tp_new_3nat_Bar and __pyx_tp_dealloc_3nat_Bar read "nat.Bar.__new__" and
//   "nat.Bar.__dealloc__"; the module's initialisation, __pyx_pymod_exec_nat, "nat.<module>".
// Anything else is returned as it is. Cython's names are ambiguous in one rare shape: a
// function whose name is a length-prefixed identifier followed by "_" and more
// ("Foo_1method" with a counter of 3, written "3Foo_1method") reads as a method of a class
// ("Foo.method"). Throws std::bad_alloc.
std::string readable_native_name(std::string_view symbol);

// The symbol without GCC's clone and piece suffixes (".cold", ".part.N", ".constprop.N",
// ".isra.N", ".lto_priv.N", ...): everything from the first '.' after a non-empty name. C
// identifiers and mangled C++ names hold no '.'. noexcept.
std::string_view without_clone_suffix(std::string_view symbol) noexcept;

// The Python name that a Cython C function's name stands for ("nat.Bar.fast"), or "" when
// symbol is not one of the Cython function names described above. Throws std::bad_alloc.
std::string cython_python_name(std::string_view symbol);

} // namespace pyust::analysis
