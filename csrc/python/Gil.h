// Whether this thread holds the GIL, for code that runs on any thread: a
// stream worker, mccl's threads, a destructor while the interpreter exits.
#pragma once

#include <Python.h>

namespace torch_mydev {

inline bool interpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// The thread state holding the GIL is this thread's own. Python 3.11 keeps
// the holder's state in a global, read on any thread, and PyGILState_Check
// answers 1 on any thread once a subinterpreter exists: neither says alone.
inline bool holdsGil() {
  if (Py_IsInitialized() == 0) {
    return false;
  }
#if PY_VERSION_HEX >= 0x030D0000
  PyThreadState* holder = PyThreadState_GetUnchecked();
#else
  PyThreadState* holder = _PyThreadState_UncheckedGet();
#endif
  return holder != nullptr && holder == PyGILState_GetThisThreadState();
}

}  // namespace torch_mydev
