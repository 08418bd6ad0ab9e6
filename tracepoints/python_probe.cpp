// The probe translation unit of the `python` provider: generates the probe
// functions and the tracepoint definitions. Nothing else belongs here.
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "python_tp.h"
