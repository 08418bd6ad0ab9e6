// A C++ extension module, instrumented like cext: cppext.total_norm(n) sums the norms of n
// vectors through functions in a namespace, a class and a template. Under `pyust run
// --native` its frames read as C++ names (geometry::norm(geometry::Vec const&)), demangled
// from their symbols (_ZN8geometry4normERKNS_3VecE). The C++ library's inline functions are
// not instrumented: pyust's cflags leave out /usr/include.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cmath>

namespace geometry {

struct Vec {
    double x;
    double y;
    double dot(const Vec& other) const { return x * other.x + y * other.y; }
};

template <typename T> T squared(T value)
{
    return value * value;
}

__attribute__((noinline)) double norm(const Vec& v)
{
    return std::sqrt(squared(v.dot(v)));
}

__attribute__((noinline)) double total_norm(long n)
{
    double total = 0;
    for (long i = 0; i < n; ++i)
        total += norm(Vec{static_cast<double>(i), 0.0});
    return total;
}

} // namespace geometry

static PyObject* total_norm(PyObject*, PyObject* args)
{
    long n = 0;
    if (!PyArg_ParseTuple(args, "l", &n))
        return nullptr;
    return PyFloat_FromDouble(geometry::total_norm(n));
}

static PyMethodDef methods[] = {
    {"total_norm", total_norm, METH_VARARGS, "Sum of the norms of (i, 0) for i in range(n)."},
    {nullptr, nullptr, 0, nullptr},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "cppext",
    "An instrumented C++ extension (pyust example).",
    -1,
    methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

PyMODINIT_FUNC PyInit_cppext(void)
{
    return PyModule_Create(&module);
}
