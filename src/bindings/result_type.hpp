// fastvec._core.Result: a batch of results, named field by field. It is what
// step()/recv() of both pools return to fastvec.VectorEnv; the Python-env
// pool makes one by name, fastvec._core.Result(obs=..., ..., final_info=...).
// kResultFields is the one list of the fields: their names, their order
// (Result(fields) and Result._fields) and, by name, their positions (result_index::k...).
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
#include <string_view>

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

// The position of the field called `name`; a name not in the table does not compile (where constant).
constexpr int result_field(std::string_view name) {
  for (int i = 0; i < kNumResultFields; ++i)
    if (name == kResultFields[i].name) return i;
  throw "not a field of kResultFields";
}

// Each field's position, by name: what C++ fills a Result's fields by.
namespace result_index {
inline constexpr int kObs = result_field("obs"), kReward = result_field("reward"),
                     kTerminated = result_field("terminated"), kTruncated = result_field("truncated"),
                     kEnvId = result_field("env_id"), kEnded = result_field("ended"),
                     kEpisodeReturn = result_field("episode_return"), kEpisodeLength = result_field("episode_length"),
                     kFinalObs = result_field("final_obs"), kInfo = result_field("info"),
                     kFinalInfo = result_field("final_info");
}  // namespace result_index

struct ResultObject {
  PyObject_HEAD PyObject* fields[kNumResultFields];
};

inline PyTypeObject* result_type = nullptr;  // made once, at module import (make_result_type)
inline PyObject* result_names[kNumResultFields] = {};  // the fields' names, interned (make_result_type)

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

// Result(obs=..., ..., final_info=...): every field, by name.
inline PyObject* result_from_keywords(PyObject* kwargs) {
  PyObject* fields[kNumResultFields];
  for (int i = 0; i < kNumResultFields; ++i) {
    PyObject* value = PyDict_GetItemWithError(kwargs, result_names[i]);  // borrowed
    if (value == nullptr) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "Result() missing field '%s'", kResultFields[i].name);
      for (int k = 0; k < i; ++k) Py_DECREF(fields[k]);
      return nullptr;
    }
    fields[i] = Py_NewRef(value);
  }
  if (PyDict_GET_SIZE(kwargs) != kNumResultFields) {  // a name that is not a field's
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      bool known = false;
      for (PyObject* name : result_names) known = known || PyObject_RichCompareBool(key, name, Py_EQ) == 1;
      if (!known) {
        PyErr_Format(PyExc_TypeError, "Result() got an unexpected field %R", key);
        break;
      }
    }
    for (PyObject* f : fields) Py_DECREF(f);
    return nullptr;
  }
  return new_result(fields);
}

inline PyObject* result_new(PyTypeObject*, PyObject* args, PyObject* kwargs) {
  if (kwargs != nullptr && PyTuple_GET_SIZE(args) == 0 && PyDict_GET_SIZE(kwargs) > 0 &&
      (PyDict_GET_SIZE(kwargs) != 1 || PyDict_GetItemString(kwargs, "fields") == nullptr))
    return result_from_keywords(kwargs);  // (Result(fields=...) is the sequence, by its name)
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

// The position of the field called `name` (a str), or -1.
inline int result_position(PyObject* name) {
  for (int i = 0; i < kNumResultFields; ++i)
    if (name == result_names[i]) return i;  // (a keyword of a call in Python code: interned, the same object)
  for (int i = 0; i < kNumResultFields; ++i)
    if (PyUnicode_Check(name) && PyUnicode_Compare(name, result_names[i]) == 0) return i;
  return -1;
}

// Calls of Result, without the argument tuple and keyword dict of tp_new: Result(obs=..., ..., final_info=...)
// with every field by name, the Python-env pool's, costs what Result(fields) costs. Any other call goes to
// result_new, which words what is wrong.
inline PyObject* result_vectorcall(PyObject* type, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs == 0 && kwnames != nullptr && PyTuple_GET_SIZE(kwnames) == kNumResultFields) {
    PyObject* fields[kNumResultFields] = {};
    bool each_once = true;
    for (int k = 0; k < kNumResultFields && each_once; ++k) {
      PyObject* name = PyTuple_GET_ITEM(kwnames, k);
      const int i = name == result_names[k] ? k : result_position(name);
      each_once = i >= 0 && fields[i] == nullptr;
      if (each_once) fields[i] = args[k];
    }
    if (each_once) {
      for (PyObject*& f : fields) f = Py_NewRef(f);
      return new_result(fields);
    }
  }
  PyObject* tuple = PyTuple_New(nargs);
  if (tuple == nullptr) return nullptr;
  for (Py_ssize_t k = 0; k < nargs; ++k) PyTuple_SET_ITEM(tuple, k, Py_NewRef(args[k]));
  PyObject* kwargs = nullptr;
  if (kwnames != nullptr) {
    kwargs = PyDict_New();
    for (Py_ssize_t k = 0; kwargs != nullptr && k < PyTuple_GET_SIZE(kwnames); ++k) {
      if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) != 0) Py_CLEAR(kwargs);
    }
    if (kwargs == nullptr) {
      Py_DECREF(tuple);
      return nullptr;
    }
  }
  PyObject* r = result_new(reinterpret_cast<PyTypeObject*>(type), tuple, kwargs);
  Py_DECREF(tuple);
  Py_XDECREF(kwargs);
  return r;
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

// Makes fastvec._core.Result (sets result_type and result_names); nullptr with a Python error set on failure.
inline PyTypeObject* make_result_type() {
  static PyMemberDef members[kNumResultFields + 1] = {};
  static std::string doc = "A batch of results from a pool (private): Result(fields), one per name of _fields in "
                           "order, or Result(obs=..., ..., final_info=...), each by name:";
  for (int i = 0; i < kNumResultFields; ++i) {
    members[i] = {kResultFields[i].name, T_OBJECT_EX,
                  static_cast<Py_ssize_t>(offsetof(ResultObject, fields) + i * sizeof(PyObject*)), READONLY,
                  kResultFields[i].doc};
    doc += std::string(i ? ", " : " ") + kResultFields[i].name;
    result_names[i] = PyUnicode_InternFromString(kResultFields[i].name);
    if (result_names[i] == nullptr) return nullptr;
  }
  doc += ".";
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>(doc.c_str())},
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
  if (result_type == nullptr) return nullptr;
  result_type->tp_vectorcall = result_detail::result_vectorcall;  // (a type's own calls; no slot for it before 3.14)
  PyObject* names = PyTuple_New(kNumResultFields);  // Result._fields, as a namedtuple's
  if (names == nullptr) return nullptr;
  for (int i = 0; i < kNumResultFields; ++i) PyTuple_SET_ITEM(names, i, Py_NewRef(result_names[i]));
  const int set = PyObject_SetAttrString(reinterpret_cast<PyObject*>(result_type), "_fields", names);
  Py_DECREF(names);
  return set == 0 ? result_type : nullptr;
}

}  // namespace fastvec::bindings
