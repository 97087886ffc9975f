#include "result_maker.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/spec.hpp"
#include "result_type.hpp"

namespace fastvec::bindings {
namespace {

using core::Batch;

// A writable numpy array of `dtype` viewing `data` (C-contiguous when `strides` is null), owned by `owner`.
// numpy's C API directly: pybind11's constructors build shape and stride vectors for each array, and a
// step returns one array per field (docs/performance.md).
py::object view(const py::dtype& dtype, int nd, const py::ssize_t* shape, const py::ssize_t* strides, void* data,
                const py::handle& owner) {
  auto& api = py::detail::npy_api::get();
  PyObject* arr = api.PyArray_NewFromDescr_(api.PyArray_Type_, dtype.inc_ref().ptr(), nd, shape, strides, data,
                                            py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr);  // steals dtype
  if (arr == nullptr) throw py::error_already_set();
  if (api.PyArray_SetBaseObject_(arr, owner.inc_ref().ptr()) != 0) {  // steals owner
    Py_DECREF(arr);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(arr);
}

// The Result of `items`, one per field at its position (result_index::k...), each set; it takes them.
py::object take_result(py::object (&items)[kNumResultFields]) {
  PyObject* fields[kNumResultFields];
  for (int i = 0; i < kNumResultFields; ++i) {
    if (!items[i]) throw std::logic_error(std::string("Result field ") + kResultFields[i].name + " not set");
  }
  for (int i = 0; i < kNumResultFields; ++i) fields[i] = items[i].release().ptr();
  PyObject* r = new_result(fields);
  if (r == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(r);
}

}  // namespace

py::object ResultMaker::observations(void* data, py::ssize_t rows, const py::handle& owner) const {
  std::vector<py::ssize_t> obs_shape = obs_shape_;
  obs_shape[0] = rows;
  if (obs_columns_.empty())
    return view(obs_dtype_, static_cast<int>(obs_shape.size()), obs_shape.data(), nullptr, data, owner);
  // Each field: its columns of the (rows, row_size) block, C-contiguous within a row.
  const py::ssize_t item = obs_dtype_.itemsize();
  py::ssize_t row_bytes = item;
  for (size_t k = 1; k < obs_shape.size(); ++k) row_bytes *= obs_shape[k];
  py::dict out;
  py::tuple parts(obs_tuple_ ? obs_columns_.size() : 0);
  for (size_t k = 0; k < obs_columns_.size(); ++k) {
    const ObsColumn& c = obs_columns_[k];
    std::vector<py::ssize_t> shape = c.shape, strides(c.shape.size());
    shape[0] = rows;
    py::ssize_t stride = item;
    for (size_t k = shape.size(); k-- > 1;) {
      strides[k] = stride;
      stride *= shape[k];
    }
    strides[0] = row_bytes;
    py::object part = view(obs_dtype_, static_cast<int>(shape.size()), shape.data(), strides.data(),
                           static_cast<std::byte*>(data) + c.offset, owner);
    if (obs_tuple_)
      parts[k] = std::move(part);
    else
      out[c.key] = std::move(part);
  }
  if (obs_tuple_) return parts;
  return out;
}

void ResultMaker::prepare(const core::PoolBase& pool) {
  const core::Spec& s = pool.spec();
  obs_shape_ = {pool.batch_size()};
  obs_shape_.insert(obs_shape_.end(), s.obs_shape.begin(), s.obs_shape.end());
  obs_dtype_ = py::dtype(pool.obs_dtype());
  obs_tuple_ = s.obs_tuple;
  py::ssize_t at = 0;
  for (const core::ObsField& f : s.obs_fields) {
    std::vector<py::ssize_t> shape{pool.batch_size()};
    shape.insert(shape.end(), f.shape.begin(), f.shape.end());
    obs_columns_.push_back({py::str(f.name), std::move(shape), at});
    at += static_cast<py::ssize_t>(core::obs_field_size(f)) * obs_dtype_.itemsize();
  }
  reward_dtype_ = py::dtype(pool.reward_dtype());
  const std::vector<size_t> offsets = core::info_offsets(s.info);
  info_row_bytes_ = static_cast<py::ssize_t>(core::info_row_bytes(s.info, s.info_masks));
  info_mask_offset_ = static_cast<py::ssize_t>(core::info_mask_offset(s.info));
  for (size_t k = 0; k < s.info.size(); ++k)
    info_columns_.push_back({py::str(s.info[k].name), py::str("_" + s.info[k].name),
                             py::dtype(core::info_dtype(s.info[k].type)), static_cast<py::ssize_t>(offsets[k]),
                             static_cast<py::ssize_t>(s.info[k].size), s.info[k].at_reset});
  info_masks_ = s.info_masks;
  info_layout_->prepare(info_columns_, info_masks_);
}

py::object ResultMaker::make(std::shared_ptr<Batch> batch, py::ssize_t rows) const {
  Batch* b = batch.get();
  py::capsule owner(new std::shared_ptr<Batch>(std::move(batch)),
                    [](void* p) { delete static_cast<std::shared_ptr<Batch>*>(p); });
  auto vec = [&](auto* ptr) {
    using T = std::remove_pointer_t<decltype(ptr)>;
    return view(py::dtype::of<T>(), 1, &rows, nullptr, ptr, owner);
  };
  // Each field of the (rows, info_row_bytes) block: a strided view, (rows,) or (rows, size), and its "_name"
  // mask: with Spec::info_masks, the pool's column of the row (a view of its own memory: a caller may change
  // one mask in place, as gymnasium's are separate arrays); without, in final_info only, a copy of `ended`.
  // As gymnasium's vector envs, a key that no row has is left out (a reset's info lacks a step's keys).
  auto columns = [&](std::byte* p, const py::handle& into, bool final) {
    for (size_t k = 0; k < info_columns_.size(); ++k) {
      const InfoColumn& c = info_columns_[k];
      std::byte* mask = p + info_mask_offset_ + static_cast<py::ssize_t>(k);
      if (info_masks_ && !final) {
        bool any = false;
        for (py::ssize_t r = 0; r < rows && !any; ++r) any = mask[r * info_row_bytes_] != std::byte{0};
        if (!any) continue;
      }
      const py::ssize_t item = c.dtype.itemsize();
      const py::ssize_t shape[2] = {rows, c.size}, strides[2] = {info_row_bytes_, item};
      set_item(into, c.key, view(c.dtype, c.size == 1 ? 1 : 2, shape, strides, p + c.offset, owner));
      if (info_masks_) {
        set_item(into, c.mask_key, view(bool_dtype_, 1, &rows, &info_row_bytes_, mask, owner));
      } else if (final) {
        set_item(into, c.mask_key, vec(b->ended()).attr("copy")());
      }
    }
  };
  py::object items[kNumResultFields];
  py::object& env_id = items[result_index::kEnvId] = vec(b->env_id());
  // The layout's keys, then the columns. Envs without info values (most) share one empty, read-only
  // mapping: no dict per step.
  py::object& info = items[result_index::kInfo] = info_layout_->begin(env_id);
  if (info) {
    columns(b->info(0), info, false);
  } else {
    info = no_info_;
  }
  items[result_index::kObs] = observations(b->obs(0), rows, owner);
  items[result_index::kReward] = view(reward_dtype_, 1, &rows, nullptr, b->reward_bytes(), owner);
  items[result_index::kTerminated] = vec(b->terminated());
  items[result_index::kTruncated] = vec(b->truncated());
  py::object none = py::none();
  items[result_index::kEnded] = items[result_index::kEpisodeReturn] = items[result_index::kEpisodeLength] = none;
  items[result_index::kFinalObs] = items[result_index::kFinalInfo] = none;
  if (b->num_ended.load(std::memory_order_relaxed) > 0) {
    items[result_index::kEnded] = vec(b->ended());
    items[result_index::kEpisodeReturn] = vec(b->episode_return());
    items[result_index::kEpisodeLength] = vec(b->episode_length());
    if (b->layout().with_final_obs) {
      items[result_index::kFinalObs] = observations(b->final_obs(0), rows, owner);
      py::dict finals;
      columns(b->final_info(0), finals, true);
      items[result_index::kFinalInfo] = std::move(finals);
    }
  }
  return take_result(items);
}

py::object ResultMaker::make_empty() const {
  const std::vector<py::ssize_t> none_of{0};
  py::object items[kNumResultFields];
  py::object& env_id = items[result_index::kEnvId] = py::array(py::dtype::of<int32_t>(), none_of);
  py::object& info = items[result_index::kInfo] = info_layout_->begin(env_id);
  if (!info) {
    info = no_info_;
  } else if (!info_masks_) {  // (with masks, a key no row has is left out: every key)
    for (const InfoColumn& c : info_columns_)
      set_item(info, c.key, c.size == 1 ? py::array(c.dtype, none_of) : py::array(c.dtype, {py::ssize_t{0}, c.size}));
  }
  std::vector<py::ssize_t> obs_shape = obs_shape_;
  obs_shape[0] = 0;
  if (obs_columns_.empty()) {
    items[result_index::kObs] = py::array(obs_dtype_, obs_shape);
  } else {
    py::dict obs;
    py::tuple parts(obs_tuple_ ? obs_columns_.size() : 0);
    for (size_t k = 0; k < obs_columns_.size(); ++k) {
      std::vector<py::ssize_t> shape = obs_columns_[k].shape;
      shape[0] = 0;
      if (obs_tuple_)
        parts[k] = py::array(obs_dtype_, shape);
      else
        obs[obs_columns_[k].key] = py::array(obs_dtype_, shape);
    }
    items[result_index::kObs] = obs_tuple_ ? py::object(std::move(parts)) : py::object(std::move(obs));
  }
  items[result_index::kReward] = py::array(reward_dtype_, none_of);
  items[result_index::kTerminated] = py::array(bool_dtype_, none_of);
  items[result_index::kTruncated] = py::array(bool_dtype_, none_of);
  py::object none = py::none();
  items[result_index::kEnded] = items[result_index::kEpisodeReturn] = items[result_index::kEpisodeLength] = none;
  items[result_index::kFinalObs] = items[result_index::kFinalInfo] = none;
  return take_result(items);
}

}  // namespace fastvec::bindings
