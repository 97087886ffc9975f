#pragma once
// How a batch's info dict is laid out around the env's info columns: a strategy the Python-facing pool is
// made with (fastvec._core.Pool(info_layout=...), named in module.cpp) and asks once per batch. The pool
// writes the env's columns (spec().info) into the dict the layout begins, the same way in every layout.
// gymnasium's layout is here; EnvPool's is envpool_info.hpp.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

namespace fastvec::bindings {

namespace py = pybind11;

// One of spec().info's fields as a batch's info dict has it: its keys (made once, as Python strings) and
// where it sits in an info row.
struct InfoColumn {
  py::object key, mask_key;
  py::dtype dtype;
  py::ssize_t offset, size;
  bool at_reset;
};

// Owned by one Python-facing pool; called with the GIL held.
class InfoLayout {
 public:
  virtual ~InfoLayout() = default;
  // Whether the pool counts each env's steps in an info column of its own, "elapsed_step" (after the env's:
  // core::PoolConfig::elapsed_info). Asked once, before the pool is made.
  virtual bool elapsed_step() const = 0;
  // Called once, before any batch: the info columns (the env's, then the pool's); masks: Spec::info_masks.
  virtual void prepare(const std::vector<InfoColumn>& columns, bool masks) = 0;
  // A new dict for a batch's info, holding what the layout puts ahead of the columns (env_id: the rows' env
  // ids); a null object when the batch has no info values (the pool hands out a shared empty mapping).
  virtual py::object begin(const py::object& env_id) const = 0;
};

inline void set_item(const py::handle& dict, const py::handle& key, const py::handle& value) {
  if (PyDict_SetItem(dict.ptr(), key.ptr(), value.ptr()) != 0) throw py::error_already_set();
}

// A new dict with the keys (and order) of `model`: a copy of its table, where building one key by key
// allocated and grew it (EnvPool's info dicts, made on every step: it showed in small-batch stepping, see
// docs/performance.md).
inline py::dict copy_dict(const py::dict& model) {
  PyObject* d = PyDict_Copy(model.ptr());
  if (d == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::dict>(d);
}

// gymnasium's layout: the env's columns alone (fastvec.VectorEnv adds env_id and the episode statistics).
class GymnasiumInfo final : public InfoLayout {
 public:
  bool elapsed_step() const override { return false; }
  void prepare(const std::vector<InfoColumn>& columns, bool) override { has_columns_ = !columns.empty(); }
  py::object begin(const py::object&) const override { return has_columns_ ? py::dict() : py::object(); }

 private:
  bool has_columns_ = false;
};

}  // namespace fastvec::bindings
