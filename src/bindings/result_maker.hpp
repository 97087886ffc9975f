#pragma once
// A pool's batches as fastvec._core.Result objects: numpy arrays viewing each batch, without a copy.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "core/pool_base.hpp"
#include "info_layout.hpp"

namespace fastvec::bindings {

namespace py = pybind11;

// Owned by one Python-facing pool; called with the GIL held.
class ResultMaker {
 public:
  // `layout`: what a batch's info holds besides the env's columns.
  explicit ResultMaker(std::unique_ptr<InfoLayout> layout) : info_layout_(std::move(layout)) {}

  // Whether the pool is to count each env's steps in an info column (core::PoolConfig::elapsed_info).
  bool elapsed_step() const { return info_layout_->elapsed_step(); }

  // Called once, when the pool is made, before any batch: its spec, dtypes and batch size.
  void prepare(const core::PoolBase& pool);

  // A Result of numpy arrays viewing the batch's first `rows` rows, which stays alive (and unrecycled) while
  // any of them does. The env's info fields (spec.info) become info[name] columns; in same-step mode the
  // ended episodes' final values become final_info[name] with masks.
  py::object make(std::shared_ptr<core::Batch> batch, py::ssize_t rows) const;

  // A Result of no rows (a partial reset of no env): empty arrays of the batch's dtypes and shapes.
  py::object make_empty() const;

 private:
  // A batch's observations viewing its rows from `data`: one array, or with Spec::obs_fields a dict of one
  // array per field, (rows, *shape), each a strided view of its columns.
  py::object observations(void* data, py::ssize_t rows, const py::handle& owner) const;

  // One of Spec::obs_fields as a batch's dict has it.
  struct ObsColumn {
    py::str key;
    std::vector<py::ssize_t> shape;  // (rows, *field shape): rows set per batch
    py::ssize_t offset;              // in bytes, within the row
  };
  std::vector<py::ssize_t> obs_shape_;  // (batch_size, *spec.obs_shape)
  std::vector<ObsColumn> obs_columns_;  // spec.obs_fields, in order (empty: observations are one array)
  bool obs_tuple_ = false;              // spec.obs_tuple: the columns make a tuple, not a dict
  py::dtype obs_dtype_, reward_dtype_, bool_dtype_ = py::dtype::of<bool>();
  py::object no_info_ = py::module_::import("types").attr("MappingProxyType")(py::dict());
  const std::unique_ptr<InfoLayout> info_layout_;
  std::vector<InfoColumn> info_columns_;  // spec().info's fields
  py::ssize_t info_row_bytes_ = 0, info_mask_offset_ = 0;
  bool info_masks_ = false;
};

}  // namespace fastvec::bindings
