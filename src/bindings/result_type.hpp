// fastvec._core.Result: a batch of results, named field by field. It is what
// step()/recv() of both pools return to fastvec.VectorEnv; the Python-env
// pool makes one with fastvec._core.Result(fields).
//
// A fixed-size object with one read-only slot per field, so it costs what a
// tuple costs. (A struct sequence, as os.stat_result, does not: CPython 3.11
// looks its size up in its type's dict at every creation and deallocation,
// a few hundred instructions per step that showed in small-batch stepping:
// docs/performance.md.)
#pragma once

#include <Python.h>
#include <structmember.h>

#include <cstddef>
#include <string>

namespace fastvec::bindings {

struct ResultField {
  const char* name;
  const char* doc;
};

inline constexpr ResultField kResultFields[] = {
    {"obs", "observations, a row per env of the batch"},
    {"reward", "rewards: float32 (native envs), float64 (MuJoCo's and Python envs')"},
    {"terminated", "bool"},
    {"truncated", "bool"},
    {"env_id", "int32: the env of each row"},
    {"ended", "bool mask of the rows whose episode ended, or None when none did"},
    {"episode_return", "float64: the ended episodes' returns (0 in other rows), or None"},
    {"episode_length", "int32: the ended episodes' lengths (0 in other rows), or None"},
    {"final_obs", "same-step autoreset: the ended episodes' last observations, batched as obs, or None"},
    {"info", "the envs' own info values, batched as gymnasium's vector envs batch them (a dict)"},
    {"final_info", "same-step autoreset: the envs' own info values of the steps that ended episodes, or None"},
};
inline constexpr int kNumResultFields = sizeof(kResultFields) / sizeof(kResultFields[0]);

struct ResultObject {
  PyObject_HEAD PyObject* fields[kNumResultFields];
};

inline PyTypeObject* result_type = nullptr;  // made once, at module import (make_result_type)

// A Result owning `fields` (new references, none null: the caller passes Py_None).
inline PyObject* new_result(PyObject* const (&fields)[kNumResultFields]) {
  ResultObject* r = PyObject_GC_New(ResultObject, result_type);
  if (r == nullptr) {
    for (PyObject* f : fields) Py_DECREF(f);
    return nullptr;
  }
  for (int i = 0; i < kNumResultFields; ++i) r->fields[i] = fields[i];
  PyObject_GC_Track(r);
  return reinterpret_cast<PyObject*>(r);
}

namespace result_detail {

inline PyObject* result_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  PyObject* seq = nullptr;
  static const char* keywords[] = {"fields", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:Result", const_cast<char**>(keywords), &seq)) return nullptr;
  PyObject* fast = PySequence_Fast(seq, "Result(fields): fields must be a sequence");
  if (fast == nullptr) return nullptr;
  if (PySequence_Fast_GET_SIZE(fast) != kNumResultFields) {
    PyErr_Format(PyExc_ValueError, "Result(fields) takes %d fields (obs, reward, ..., final_info), got %zd",
                 kNumResultFields, PySequence_Fast_GET_SIZE(fast));
    Py_DECREF(fast);
    return nullptr;
  }
  PyObject* fields[kNumResultFields];
  for (int i = 0; i < kNumResultFields; ++i) fields[i] = Py_NewRef(PySequence_Fast_GET_ITEM(fast, i));
  Py_DECREF(fast);
  return new_result(fields);
}

inline int result_traverse(PyObject* self, visitproc visit, void* arg) {
  for (PyObject* f : reinterpret_cast<ResultObject*>(self)->fields) Py_VISIT(f);
  Py_VISIT(Py_TYPE(self));  // a heap type
  return 0;
}

inline int result_clear(PyObject* self) {
  for (PyObject*& f : reinterpret_cast<ResultObject*>(self)->fields) Py_CLEAR(f);
  return 0;
}

inline void result_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  result_clear(self);
  PyObject_GC_Del(self);
  Py_DECREF(type);
}

inline PyObject* result_repr(PyObject* self) {
  std::string text = "Result(";
  for (int i = 0; i < kNumResultFields; ++i) {
    PyObject* r = PyObject_Repr(reinterpret_cast<ResultObject*>(self)->fields[i]);
    if (r == nullptr) return nullptr;
    const char* s = PyUnicode_AsUTF8(r);
    if (s == nullptr) {
      Py_DECREF(r);
      return nullptr;
    }
    text += std::string(i ? ", " : "") + kResultFields[i].name + "=" + s;
    Py_DECREF(r);
  }
  return PyUnicode_FromString((text + ")").c_str());
}

}  // namespace result_detail

// Makes fastvec._core.Result (sets result_type); nullptr with a Python error set on failure.
inline PyTypeObject* make_result_type() {
  static PyMemberDef members[kNumResultFields + 1] = {};
  for (int i = 0; i < kNumResultFields; ++i)
    members[i] = {kResultFields[i].name, T_OBJECT_EX,
                  static_cast<Py_ssize_t>(offsetof(ResultObject, fields) + i * sizeof(PyObject*)), READONLY,
                  kResultFields[i].doc};
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("A batch of results from a pool (private): Result(fields), one per name in "
                                    "obs, reward, terminated, truncated, env_id, ended, episode_return, "
                                    "episode_length, final_obs, info, final_info.")},
      {Py_tp_new, reinterpret_cast<void*>(result_detail::result_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(result_detail::result_dealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(result_detail::result_traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(result_detail::result_clear)},
      {Py_tp_repr, reinterpret_cast<void*>(result_detail::result_repr)},
      {Py_tp_members, members},
      {0, nullptr}};
  static PyType_Spec spec = {"fastvec._core.Result", sizeof(ResultObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                             slots};
  result_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  return result_type;
}

}  // namespace fastvec::bindings
