// XLA's custom calls into fastvec's pools (fastvec's xla(): send, recv and step from inside jitted JAX
// code), written against XLA FFI's C API alone (xla/ffi/api/c_api.h, from the jaxlib the build found): its
// structs are XLA's stable binary interface, so the module works with any jaxlib whose FFI API has the same
// major version, whichever jaxlib it was built with. Each handler is an XLA_FFI_Handler, handed to
// jax.ffi.register_ffi_target as a capsule (xla_handlers()).
//
// CPU only for now: the handlers read and write XLA's buffers in host memory. A CUDA variant would register
// handlers of its own for platform "CUDA" that take the stream (XLA_FFI_Stream_Get), copy the actions to host
// memory, call the same ops (Ops below: they see host pointers only) and copy the results back.

#include "xla_ffi.hpp"

#include <xla/ffi/api/c_api.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec.hpp"
#include "xla_port.hpp"

namespace fastvec::bindings {
namespace {

using core::PoolBase;

// A buffer argument or result of the call: its element type, data and element count.
struct View {
  XLA_FFI_DataType dtype;
  void* data;
  int64_t elements;
};

View view_of(void* p) {
  const auto* b = static_cast<const XLA_FFI_Buffer*>(p);
  int64_t n = 1;
  for (int64_t d = 0; d < b->rank; ++d) n *= b->dims[d];
  return {b->dtype, b->data, n};
}

const char* type_name(XLA_FFI_DataType t) {
  switch (t) {
    case XLA_FFI_DataType_PRED: return "bool";
    case XLA_FFI_DataType_U8: return "uint8";
    case XLA_FFI_DataType_S32: return "int32";
    case XLA_FFI_DataType_S64: return "int64";
    case XLA_FFI_DataType_F32: return "float32";
    case XLA_FFI_DataType_F64: return "float64";
    default: return "another dtype";
  }
}

// Writes n values of `src` into `out`, converted to its element type (jax without x64 makes float64 and
// int64 results float32 and int32).
template <class From>
void write_as(const View& out, const From* src, int64_t n, const char* what) {
  if (out.elements != n)
    throw std::invalid_argument(std::string(what) + ": the result holds " + std::to_string(out.elements) +
                                " elements, the pool has " + std::to_string(n));
  auto copy = [&](auto* dst) {
    using To = std::remove_pointer_t<decltype(dst)>;
    if constexpr (std::is_same_v<To, From>) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(From));
    } else {
      for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<To>(src[k]);
    }
  };
  switch (out.dtype) {
    case XLA_FFI_DataType_PRED: return copy(static_cast<bool*>(out.data));
    case XLA_FFI_DataType_U8: return copy(static_cast<uint8_t*>(out.data));
    case XLA_FFI_DataType_S32: return copy(static_cast<int32_t*>(out.data));
    case XLA_FFI_DataType_S64: return copy(static_cast<int64_t*>(out.data));
    case XLA_FFI_DataType_F32: return copy(static_cast<float*>(out.data));
    case XLA_FFI_DataType_F64: return copy(static_cast<double*>(out.data));
    default: throw std::invalid_argument(std::string(what) + ": results of " + type_name(out.dtype) + " are not supported");
  }
}

// The values of `in`, converted to To.
template <class To>
std::vector<To> read_as(const View& in, const char* what) {
  std::vector<To> out(static_cast<size_t>(in.elements));
  auto copy = [&](const auto* src) {
    for (int64_t k = 0; k < in.elements; ++k) out[k] = static_cast<To>(src[k]);
  };
  switch (in.dtype) {
    case XLA_FFI_DataType_U8: copy(static_cast<const uint8_t*>(in.data)); break;
    case XLA_FFI_DataType_S32: copy(static_cast<const int32_t*>(in.data)); break;
    case XLA_FFI_DataType_S64: copy(static_cast<const int64_t*>(in.data)); break;
    case XLA_FFI_DataType_F32: copy(static_cast<const float*>(in.data)); break;
    case XLA_FFI_DataType_F64: copy(static_cast<const double*>(in.data)); break;
    default: throw std::invalid_argument(std::string(what) + " of " + type_name(in.dtype) + " are not supported");
  }
  return out;
}

// The pool's side of the calls, on host memory: what a CUDA variant would share.
struct Ops {
  // Queues a step of the envs of `ids` (none: every env, in env order) with `actions`, checked as
  // fastvec's Python calls check them (discrete actions in range, continuous ones finite).
  static void send(PoolBase& pool, const View& actions, const View& ids) {
    const std::vector<int32_t> env_ids = read_as<int32_t>(ids, "env_id");
    const int64_t rows = env_ids.empty() ? pool.num_envs() : static_cast<int64_t>(env_ids.size());
    const core::Spec& spec = pool.spec();
    int64_t per_env = 1;
    if (!pool.action_is_discrete())
      for (int64_t d : spec.action_shape) per_env *= d;
    if (actions.elements != rows * per_env)
      throw std::invalid_argument("actions: expected " + std::to_string(rows * per_env) + " elements (" +
                                  std::to_string(rows) + " envs), got " + std::to_string(actions.elements));
    const auto sent = [&](const void* data) {
      if (env_ids.empty()) {
        pool.send_step_all(data);
      } else {
        pool.send_step(data, env_ids.data(), static_cast<int>(env_ids.size()));
      }
    };
    if (pool.action_is_discrete()) {
      const std::vector<int64_t> a = read_as<int64_t>(actions, "actions");
      for (size_t k = 0; k < a.size(); ++k)
        if (a[k] < 0 || a[k] >= spec.num_actions)
          throw std::invalid_argument("actions[" + std::to_string(k) + "] = " + std::to_string(a[k]) +
                                      " is out of range for Discrete(" + std::to_string(spec.num_actions) + ")");
      return sent(a.data());
    }
    const auto finite = [&](const auto& a) {
      for (size_t k = 0; k < a.size(); ++k)
        if (!std::isfinite(a[k]))
          throw std::invalid_argument("actions must be finite, got " + std::to_string(a[k]) + " for env row " +
                                      std::to_string(static_cast<int64_t>(k) / per_env));
    };
    if (std::string_view(pool.action_dtype()) == "float64") {
      const std::vector<double> a = read_as<double>(actions, "actions");
      finite(a);
      return sent(a.data());
    }
    const std::vector<float> a = read_as<float>(actions, "actions");
    finite(a);
    sent(a.data());
  }

  // Waits for the next batch and writes it into `out`: obs, reward, terminated, truncated, env_id, then each
  // of spec().info's fields and, with Spec::info_masks, each field's mask (fastvec/_xla.py declares them so).
  static void recv(PoolBase& pool, const View* out, int64_t n_out) {
    const core::Spec& spec = pool.spec();
    const size_t fields = spec.info.size();
    const int64_t expected = 5 + static_cast<int64_t>(fields * (spec.info_masks ? 2 : 1));
    if (n_out != expected)
      throw std::invalid_argument("recv: " + std::to_string(n_out) + " results, the pool has " +
                                  std::to_string(expected));
    std::shared_ptr<core::Batch> batch = pool.recv();
    core::Batch& b = *batch;
    const int64_t rows = pool.batch_size();
    int64_t obs_size = 1;
    for (int64_t d : spec.obs_shape) obs_size *= d;
    const std::string_view obs_dtype = pool.obs_dtype();
    if (obs_dtype == "uint8") {
      write_as(out[0], reinterpret_cast<const uint8_t*>(b.obs(0)), rows * obs_size, "obs");
    } else if (obs_dtype == "float32") {
      write_as(out[0], reinterpret_cast<const float*>(b.obs(0)), rows * obs_size, "obs");
    } else if (obs_dtype == "int64") {
      write_as(out[0], reinterpret_cast<const int64_t*>(b.obs(0)), rows * obs_size, "obs");
    } else {
      write_as(out[0], reinterpret_cast<const double*>(b.obs(0)), rows * obs_size, "obs");
    }
    if (std::string_view(pool.reward_dtype()) == "float64") {
      write_as(out[1], b.reward<double>(), rows, "reward");
    } else {
      write_as(out[1], b.reward<float>(), rows, "reward");
    }
    write_as(out[2], b.terminated(), rows, "terminated");
    write_as(out[3], b.truncated(), rows, "truncated");
    write_as(out[4], b.env_id(), rows, "env_id");
    const std::vector<size_t> offsets = core::info_offsets(spec.info);
    const size_t mask_offset = core::info_mask_offset(spec.info);
    for (size_t k = 0; k < fields; ++k) {
      const core::InfoField& f = spec.info[k];
      const auto column = [&](auto zero) {
        using T = decltype(zero);
        std::vector<T> values(static_cast<size_t>(rows * f.size));
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(&values[static_cast<size_t>(r * f.size)], b.info(static_cast<int>(r)) + offsets[k],
                      sizeof(T) * static_cast<size_t>(f.size));
        write_as(out[5 + k], values.data(), rows * f.size, f.name.c_str());
      };
      switch (f.type) {
        case core::InfoField::Type::kInt8: column(int8_t{}); break;
        case core::InfoField::Type::kInt32: column(int32_t{}); break;
        case core::InfoField::Type::kInt64: column(int64_t{}); break;
        case core::InfoField::Type::kFloat64: column(double{}); break;
      }
      if (spec.info_masks) {
        std::vector<uint8_t> mask(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r)
          mask[r] = static_cast<uint8_t>(b.info(static_cast<int>(r))[mask_offset + k]) != 0;
        write_as(out[5 + fields + k], mask.data(), rows, f.name.c_str());
      }
    }
  }
};

XLA_FFI_Error* error(const XLA_FFI_Api* api, XLA_FFI_Error_Code code, const std::string& message) {
  XLA_FFI_Error_Create_Args args{};
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.extension_start = nullptr;
  args.message = message.c_str();
  args.errc = code;
  return api->XLA_FFI_Error_Create(&args);
}

// XLA asks a handler which FFI version it was built for (and its traits) through this extension.
XLA_FFI_Error* metadata(XLA_FFI_CallFrame* frame) {
  auto* ext = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
  if (ext->extension_base.struct_size < XLA_FFI_Metadata_Extension_STRUCT_SIZE ||
      ext->metadata->struct_size < XLA_FFI_Metadata_STRUCT_SIZE)
    return error(frame->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "fastvec: XLA's metadata struct is too small");
  ext->metadata->api_version = XLA_FFI_Api_Version{XLA_FFI_Api_Version_STRUCT_SIZE, nullptr, XLA_FFI_API_MAJOR,
                                                   XLA_FFI_API_MINOR};
  ext->metadata->traits = 0;
  return nullptr;
}

// The int attribute `name` of the call, or -1.
int64_t int_attr(const XLA_FFI_CallFrame* frame, std::string_view name) {
  const XLA_FFI_Attrs& attrs = frame->attrs;
  for (int64_t k = 0; k < attrs.size; ++k) {
    const XLA_FFI_ByteSpan* n = attrs.names[k];
    if (std::string_view(n->ptr, n->len) != name || attrs.types[k] != XLA_FFI_AttrType_SCALAR) continue;
    const auto* s = static_cast<const XLA_FFI_Scalar*>(attrs.attrs[k]);
    switch (s->dtype) {
      case XLA_FFI_DataType_S64: return *static_cast<const int64_t*>(s->value);
      case XLA_FFI_DataType_S32: return *static_cast<const int32_t*>(s->value);
      case XLA_FFI_DataType_U32: return *static_cast<const uint32_t*>(s->value);
      default: return -1;
    }
  }
  return -1;
}

enum class Call { kSend, kRecv, kStep };

// One handler, for each of the three calls: args (handle[, actions, env_id]), results (handle[, the batch]).
XLA_FFI_Error* handle_call(XLA_FFI_CallFrame* frame, Call call) {
  if (frame->extension_start != nullptr && frame->extension_start->type == XLA_FFI_Extension_Metadata)
    return metadata(frame);
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;
  const XLA_FFI_Api* api = frame->api;
  const int64_t n_args = call == Call::kRecv ? 1 : 3;
  const int64_t min_rets = call == Call::kSend ? 1 : 6;
  if (frame->args.size != n_args || frame->rets.size < min_rets || (call == Call::kSend && frame->rets.size != 1))
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "fastvec xla: wrong number of arguments or results");
  for (int64_t k = 0; k < frame->args.size; ++k)
    if (frame->args.types[k] != XLA_FFI_ArgType_BUFFER)
      return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "fastvec xla: arguments must be arrays");
  std::vector<View> args, rets;
  for (int64_t k = 0; k < frame->args.size; ++k) args.push_back(view_of(frame->args.args[k]));
  for (int64_t k = 0; k < frame->rets.size; ++k) rets.push_back(view_of(frame->rets.rets[k]));
  if (args[0].elements != 8 || args[0].dtype != XLA_FFI_DataType_U8 || rets[0].elements != 8 ||
      rets[0].dtype != XLA_FFI_DataType_U8)
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                 "handle: expected the (8,) uint8 handle of fastvec's xla(), got " +
                     std::to_string(args[0].elements) + " elements of " + type_name(args[0].dtype));
  const int64_t serial = int_attr(frame, "pool");
  try {
    std::shared_ptr<XlaPort> port = serial < 0 ? nullptr : XlaPort::find(static_cast<uint32_t>(serial));
    if (!port) throw std::runtime_error("the pool is closed");
    port->call(XlaHandle::read(args[0].data), rets[0].data, [&](PoolBase& pool) {
      if (call != Call::kRecv) Ops::send(pool, args[1], args[2]);
      if (call != Call::kSend) Ops::recv(pool, rets.data() + 1, static_cast<int64_t>(rets.size()) - 1);
    });
  } catch (const core::EnvError& e) {
    const std::string env = e.env_id() >= 0 ? " (env " + std::to_string(e.env_id()) + ")" : "";
    return error(api, XLA_FFI_Error_Code_ABORTED, "fastvec: an env raised" + env + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    return error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT, std::string("fastvec: ") + e.what());
  } catch (const std::exception& e) {
    return error(api, XLA_FFI_Error_Code_FAILED_PRECONDITION, std::string("fastvec: ") + e.what());
  }
  return nullptr;
}

extern "C" XLA_FFI_Error* fastvec_xla_send(XLA_FFI_CallFrame* frame) { return handle_call(frame, Call::kSend); }
extern "C" XLA_FFI_Error* fastvec_xla_recv(XLA_FFI_CallFrame* frame) { return handle_call(frame, Call::kRecv); }
extern "C" XLA_FFI_Error* fastvec_xla_step(XLA_FFI_CallFrame* frame) { return handle_call(frame, Call::kStep); }

}  // namespace

std::vector<std::pair<std::string, void*>> xla_cpu_handlers() {
  return {{"send", reinterpret_cast<void*>(&fastvec_xla_send)},
          {"recv", reinterpret_cast<void*>(&fastvec_xla_recv)},
          {"step", reinterpret_cast<void*>(&fastvec_xla_step)}};
}

}  // namespace fastvec::bindings
