// dlcp::Error -> the Python exception classes of dlcp/errors.py (one per dlcp::ErrorCode).
#pragma once

namespace dlcp::python {

// Registers the translator with pybind11. Translators are global to every pybind11 module of
// the process, so a dlcp::Error that surfaces through torch's own bindings (a ProcessGroup
// call, a future's wait) is translated too.
void register_error_translation();

}  // namespace dlcp::python
