// fastvec._core: the native pool, as seen from Python. The only C++ that
// includes pybind11 (with the other files of src/bindings); this file names
// what the module holds, and each name's work is done in its own file.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <map>
#include <memory>
#include <string>

#include "env_registry.hpp"
#include "envpool_info.hpp"
#include "errors.hpp"
#include "fork.hpp"
#include "info_layout.hpp"
#include "loop_rates.hpp"
#include "native_pool.hpp"
#include "result_type.hpp"
#include "write_pending.hpp"
#ifdef FASTVEC_WITH_XLA
#include "xla_ffi.hpp"
#endif
#include "envs/numpy_unary.hpp"
#ifdef FASTVEC_WITH_ATARI
#include "envs/atari/atari.hpp"
#endif
#ifdef FASTVEC_WITH_MUJOCO
#include <mujoco/mujoco.h>

#include "envs/mujoco/simulation.hpp"
#endif

namespace py = pybind11;

namespace {

// Pool(info_layout=...): the layout of each batch's info dict, by name.
std::unique_ptr<fastvec::bindings::InfoLayout> info_layout(const std::string& name) {
  if (name == "gymnasium") return std::make_unique<fastvec::bindings::GymnasiumInfo>();
  if (name == "envpool") return std::make_unique<fastvec::bindings::EnvPoolInfo>();
  throw py::value_error("info_layout must be 'gymnasium' or 'envpool', got '" + name + "'");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  namespace fb = fastvec::bindings;
  using fb::NativePool;
  m.doc() = "fastvec's native pool (private; use fastvec.make)";
  m.attr("ale_py_version") = FASTVEC_ALE_PY_VERSION;
  if (fb::make_result_type() == nullptr) throw py::error_already_set();
  fb::count_forks();
  m.attr("Result") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(fb::result_type));
  fb::EnvFamily::add_registered_envs();
#ifdef FASTVEC_WITH_ATARI
  m.attr("has_atari") = true;
  // "avx512" or "portable": the Atari preprocessing kernels this CPU runs
  // (FASTVEC_PORTABLE_KERNELS=1 forces the portable ones, for their tests).
  m.attr("atari_kernels") = fastvec::envs::atari_kernels();
  m.def("atari_loop_rate", &fb::emulator_loop_rate, py::arg("options"), py::arg("string_options"), py::arg("steps"),
        py::arg("preprocess"));
#else
  m.attr("has_atari") = false;
#endif
#ifdef FASTVEC_WITH_MUJOCO
  m.attr("has_mujoco") = true;
  m.attr("mujoco_version") = mj_versionString();
  m.def(
      "set_numpy_dot",
      [](const std::string& kind) {
        using fastvec::envs::mujoco::DotKind;
        const DotKind k = kind == "fused"       ? DotKind::kFused
                          : kind == "separate"  ? DotKind::kSeparate
                          : kind == "two_lanes" ? DotKind::kTwoLanes
                                                : throw py::value_error(
                                                      "kind must be 'fused', 'separate' or 'two_lanes', got '" +
                                                      kind + "'");
        fastvec::envs::mujoco::numpy_dot.store(k, std::memory_order_relaxed);
      },
      py::arg("kind"),
      "How numpy's dot sums a short vector in this process ('fused', 'separate' or 'two_lanes': "
      "fastvec.mujoco_models.numpy_dot_kind), for the envs' np.linalg.norm; set by fastvec when it is imported.");
#else
  m.attr("has_mujoco") = false;
#endif

  m.def(
      "set_numpy_exp",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_exp.set(reinterpret_cast<fastvec::envs::NumpyUnary::Loop>(loop),
                                     reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 exp loop (its address and data), for the MPE and dm_control envs' np.exp; set by fastvec when it is "
      "imported (fastvec._numpy_loops).");

  m.def(
      "set_numpy_log1p",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_log1p.set(reinterpret_cast<fastvec::envs::NumpyUnary::Loop>(loop),
                                       reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 log1p loop (its address and data), for the dm_control envs' np.log1p; set by fastvec when "
      "it is imported (fastvec._numpy_loops).");

  m.def(
      "set_numpy_arcsinh",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_arcsinh.set(reinterpret_cast<fastvec::envs::NumpyUnary::Loop>(loop),
                                         reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 arcsinh loop (its address and data), for the dm_control envs' np.arcsinh; set by fastvec "
      "when it is imported (fastvec._numpy_loops).");

  m.def(
      "set_numpy_tanh",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_tanh.set(reinterpret_cast<fastvec::envs::NumpyUnary::Loop>(loop),
                                      reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 tanh loop (its address and data), for the dm_control envs' np.tanh; set by fastvec when it "
      "is imported (fastvec._numpy_loops).");

  m.def(
      "set_numpy_cos",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_cos.set(reinterpret_cast<fastvec::envs::NumpyUnary::Loop>(loop),
                                     reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 cos loop (its address and data), for the dm_control envs' np.cos; set by fastvec when it "
      "is imported (fastvec._numpy_loops).");

#ifdef FASTVEC_WITH_XLA
  m.attr("has_xla") = true;
  m.def(
      "xla_handlers",
      [] {
        py::dict handlers;
        for (const auto& [name, fn] : fb::xla_cpu_handlers()) handlers[py::str(name)] = py::capsule(fn);
        return handlers;
      },
      "XLA FFI handlers of fastvec's xla() calls on JAX's CPU backend, by name ('send', 'recv', 'step'), as "
      "capsules for jax.ffi.register_ffi_target (fastvec._xla registers them).");
#else
  m.attr("has_xla") = false;
#endif

  m.def(
      "set_numpy_arctan2",
      [](uintptr_t loop, uintptr_t data) {
        fastvec::envs::numpy_arctan2.set(reinterpret_cast<fastvec::envs::NumpyBinary::Loop>(loop),
                                         reinterpret_cast<void*>(data));
      },
      py::arg("loop"), py::arg("data"),
      "numpy's float64 arctan2 loop (its address and data), for the dm_control envs' np.arctan2; set by fastvec "
      "when it is imported (fastvec._numpy_loops).");

  fb::translate_errors(m);

  // The benchmarks' ceiling for any native env: one env stepped in a C++ loop on this thread (registry's loop_rate).
  m.def("loop_rate", &fb::env_loop_rate, py::arg("env"), py::arg("options"), py::arg("string_options"),
        py::arg("range_options"), py::arg("steps"), py::arg("max_episode_steps"), py::arg("next_step") = true);

  m.def("control_timestep", &fb::env_control_timestep, py::arg("env"), py::arg("options"),
        py::arg("string_options"), py::arg("range_options"));

  // For the Python-env pool's request pipes.
  m.def("write_pending", &fb::write_pending, py::arg("fd"), py::arg("pending"));

  // The native envs, for fastvec.registry: each one's metadata and option table.
  m.def("native_envs", [] {
    py::list envs;
    for (const auto& [id, entry] : fastvec::bindings::native_envs()) {
      py::list options;
      for (const fastvec::core::OptionSpec& o : entry.options) {
        py::dict d;
        d["name"] = o.name;
        d["kind"] = fastvec::core::kind_name(o.kind);
        using Kind = fastvec::core::OptionSpec::Kind;
        switch (o.kind) {
          case Kind::kBool:
            d["default"] = py::bool_(o.fallback != 0);
            break;
          case Kind::kInt:
            d["default"] = py::int_(static_cast<long long>(o.fallback));
            break;
          case Kind::kReal:
            d["default"] = py::float_(o.fallback);
            break;
          case Kind::kString:
          case Kind::kFile:
          case Kind::kName:
            d["default"] = py::str(o.text_fallback);
            break;
          case Kind::kText:  // "" is None
            d["default"] = o.text_fallback.empty() ? py::object(py::none()) : py::object(py::str(o.text_fallback));
            break;
          case Kind::kRange:
            d["default"] = py::make_tuple(o.fallback, o.fallback_high);
            break;
        }
        d["low"] = o.low;
        d["high"] = o.high;
        options.append(d);
      }
      py::dict d;
      d["id"] = id;
      d["max_episode_steps"] = entry.info.max_episode_steps;
      d["reward_threshold"] = entry.info.reward_threshold;
      d["hidden"] = entry.info.hidden;
      d["family"] = entry.info.family;
      d["built"] = entry.built;
      d["options"] = options;
      envs.append(d);
    }
    return envs;
  });

  py::class_<NativePool>(m, "Pool")
      .def(py::init([](const std::string& env, int num_envs, int batch_size, int num_threads, int block_size,
                       int max_episode_steps, const std::string& autoreset_mode, uint64_t seed,
                       const std::map<std::string, double>& options,
                       const std::map<std::string, std::string>& string_options, bool adapt_threads,
                       int initial_threads, const std::string& layout, int thread_affinity_offset,
                       const std::map<std::string, std::array<double, 2>>& range_options) {
             return std::make_unique<NativePool>(env, num_envs, batch_size, num_threads, block_size,
                                                 max_episode_steps, autoreset_mode, seed, options, string_options,
                                                 adapt_threads, initial_threads, info_layout(layout),
                                                 thread_affinity_offset, range_options);
           }),
           py::arg("env"), py::arg("num_envs"), py::arg("batch_size"), py::arg("num_threads"), py::arg("block_size"),
           py::arg("max_episode_steps"), py::arg("autoreset_mode"), py::arg("seed"), py::arg("options"),
           py::arg("string_options"), py::kw_only(), py::arg("adapt_threads") = false, py::arg("initial_threads") = 0,
           py::arg("info_layout") = "gymnasium", py::arg("thread_affinity_offset") = -1,
           py::arg("range_options") = std::map<std::string, std::array<double, 2>>{})
      .def("spec", &NativePool::spec)
      .def_property_readonly("num_envs", &NativePool::num_envs)
      .def_property_readonly("batch_size", &NativePool::batch_size)
      .def_property_readonly("num_threads", &NativePool::num_threads)
      .def_property_readonly("active_threads", &NativePool::active_threads)
      .def_property_readonly("block_size", &NativePool::block_size)
      .def_property_readonly("closed", &NativePool::closed)
      .def_property_readonly("in_flight", &NativePool::in_flight)
      .def("step", &NativePool::step, py::arg("actions"))
      .def("send", &NativePool::send, py::arg("actions"), py::arg("env_id"))
      .def("recv", &NativePool::recv, py::arg("timeout") = py::none())
      .def("recv_rest", &NativePool::recv_rest, py::arg("timeout") = py::none())
      .def("send_reset", &NativePool::send_reset, py::arg("env_id"), py::arg("seeds"))
      .def("reset_envs", &NativePool::reset_envs, py::arg("env_id"), py::arg("seeds"), py::arg("all_rows"))
      .def("drain", &NativePool::drain)
      .def("peek", &NativePool::peek, py::arg("env_id"), py::arg("frames"))
      .def("close", &NativePool::close)
      .def("xla_handle", &NativePool::xla_handle);
}
