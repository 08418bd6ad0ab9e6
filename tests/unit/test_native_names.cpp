// The readable names of native frames (src/analysis/native_names.hpp). The Cython names are
// the ones Cython 0.29.32 and 3.1.6 generate for the same module (they agree).
#include <doctest/doctest.h>

#include "analysis/native_names.hpp"

using pyust::analysis::cython_python_name;
using pyust::analysis::readable_native_name;
using pyust::analysis::without_clone_suffix;

TEST_CASE("GCC's pieces and clones are named after their function")
{
    CHECK(without_clone_suffix("helper_c.cold") == "helper_c");
    CHECK(without_clone_suffix("helper_c.part.0") == "helper_c");
    CHECK(without_clone_suffix("f.constprop.0.isra.0") == "f");
    CHECK(without_clone_suffix("g.lto_priv.0") == "g");
    CHECK(without_clone_suffix("plain") == "plain");
    CHECK(without_clone_suffix(".hidden") == ".hidden");
    CHECK(readable_native_name("__Pyx_AddTraceback.constprop.0") == "__Pyx_AddTraceback");
}

TEST_CASE("C++ symbols are demangled, clones included; a bad one stays as it is")
{
    CHECK(readable_native_name("_ZN2ns3fooEi") == "ns::foo(int)");
    CHECK(readable_native_name("_ZN2ns3fooEi.cold") == "ns::foo(int)");
    CHECK(readable_native_name("_ZNK3Bar4sizeEv") == "Bar::size() const");
    CHECK(readable_native_name("_Znotmangled") == "_Znotmangled");
}

TEST_CASE("Cython's functions read as the Python names they implement")
{
    // Module-level def: wrapper (counter 1) and implementation.
    CHECK(cython_python_name("__pyx_pw_3nat_1cy_entry") == "nat.cy_entry");
    CHECK(cython_python_name("__pyx_pf_3nat_cy_entry") == "nat.cy_entry");
    // cdef function.
    CHECK(cython_python_name("__pyx_f_3nat_cy_inner") == "nat.cy_inner");
    // A name with '_' whose counter happens to be its length or shorter.
    CHECK(cython_python_name("__pyx_pw_3nat_3a_b") == "nat.a_b");
    CHECK(cython_python_name("__pyx_pf_3nat_2a_b") == "nat.a_b");
    // Methods of a class and of a cdef class; a cpdef method's three functions.
    CHECK(cython_python_name("__pyx_pw_3nat_3Foo_1method") == "nat.Foo.method");
    CHECK(cython_python_name("__pyx_pf_3nat_3Foo_method") == "nat.Foo.method");
    CHECK(cython_python_name("__pyx_pw_3nat_3Foo_3Foo_1") == "nat.Foo.Foo_1");
    CHECK(cython_python_name("__pyx_pf_3nat_3Foo_2Foo_1") == "nat.Foo.Foo_1");
    CHECK(cython_python_name("__pyx_pw_3nat_3Bar_3fast") == "nat.Bar.fast");
    CHECK(cython_python_name("__pyx_pf_3nat_3Bar_2fast") == "nat.Bar.fast");
    CHECK(cython_python_name("__pyx_f_3nat_3Bar_fast") == "nat.Bar.fast");
    CHECK(cython_python_name("__pyx_pf_3nat_3Bar_4__reduce_cython__") ==
          "nat.Bar.__reduce_cython__");
    // Generators, lambdas, the module's own code, a module in a package.
    CHECK(cython_python_name("__pyx_pf_3nat_4gen") == "nat.gen");
    CHECK(cython_python_name("__pyx_gb_3nat_6generator") == "nat.generator");
    CHECK(cython_python_name("__pyx_pw_3nat_3gen_lambda") == "nat.gen.<lambda>");
    CHECK(cython_python_name("__pyx_pymod_exec_nat") == "nat.<module>");
    CHECK(cython_python_name("__pyx_tp_new_3nat_Bar") == "nat.Bar.__new__");
    CHECK(cython_python_name("__pyx_tp_dealloc_3nat_Bar") == "nat.Bar.__dealloc__");
    CHECK(cython_python_name("__pyx_pw_3pkg_3nat_3Bar_1go") == "pkg.nat.Bar.go");
}

TEST_CASE("what is not a Cython function name is left alone")
{
    CHECK(cython_python_name("__pyx_find_code_object").empty());
    CHECK(cython_python_name("__pyx_pymod_create").empty());
    CHECK(cython_python_name("__pyx_lambda_funcdef_lambda").empty());
    CHECK(cython_python_name("__pyx_pw_").empty());
    CHECK(cython_python_name("__pyx_pw_3nat_").empty());
    CHECK(cython_python_name("__pyx_pw_12").empty());
    CHECK(cython_python_name("helper_c").empty());
    CHECK(readable_native_name("__pyx_find_code_object") == "__pyx_find_code_object");
    CHECK(readable_native_name("helper_c") == "helper_c");
    CHECK(readable_native_name("__pyx_f_4foo2_inner") == "foo2.inner");
}
