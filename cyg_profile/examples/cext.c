/* A plain C extension module, instrumented like foo2: cext.square_sum(n) calls square() n
 * times. Every function here is a native frame under `pyust run --native`; the inline
 * functions of Python.h (Py_INCREF, ...) are not, thanks to pyust's cflags. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static long square(long x)
{
    return x * x;
}

static PyObject* square_sum(PyObject* self, PyObject* args)
{
    (void)self;
    long n = 0;
    if (!PyArg_ParseTuple(args, "l", &n))
        return NULL;
    long total = 0;
    for (long i = 0; i < n; ++i)
        total += square(i);
    return PyLong_FromLong(total);
}

static PyMethodDef methods[] = {
    {"square_sum", square_sum, METH_VARARGS, "Sum of i*i for i in range(n)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "cext",
    "An instrumented C extension (pyust example).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit_cext(void)
{
    return PyModule_Create(&module);
}
