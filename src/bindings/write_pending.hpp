#pragma once
// The Python-env pool's request pipes (fastvec._core.write_pending).

#include <pybind11/pybind11.h>
#include <unistd.h>

#include <cerrno>

namespace fastvec::bindings {

namespace py = pybind11;

// Writes what a non-blocking fd takes of `pending` (a bytearray) and deletes that from its front, in one
// call, so that no signal handler's exception (Ctrl-C) can fall between the write and the bookkeeping
// (CPython runs handlers as a call returns): a request written but still pending would be sent twice, and
// the rest of one half written would tear the stream. Returns the bytes left; a full pipe writes nothing
// (BlockingIOError is not raised), a closed one raises OSError.
inline Py_ssize_t write_pending(int fd, const py::bytearray& pending) {
  PyObject* buf = pending.ptr();
  const Py_ssize_t size = PyByteArray_GET_SIZE(buf);
  if (size == 0) return Py_ssize_t{0};
  const ssize_t n = ::write(fd, PyByteArray_AS_STRING(buf), static_cast<size_t>(size));
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size;  // the caller waits, and runs handlers
    PyErr_SetFromErrno(PyExc_OSError);
    throw py::error_already_set();
  }
  if (n > 0 && PySequence_DelSlice(buf, 0, n) != 0) throw py::error_already_set();
  return size - n;
}

}  // namespace fastvec::bindings
