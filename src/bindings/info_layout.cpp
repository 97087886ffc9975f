// The info layouts a pool can be made with, by name.

#include "info_layout.hpp"

#include "envpool_info.hpp"

namespace fastvec::bindings {
namespace {

// gymnasium's layout: the env's columns alone (fastvec.VectorEnv adds env_id and the episode statistics).
class GymnasiumInfo final : public InfoLayout {
 public:
  bool elapsed_step() const override { return false; }
  void prepare(const std::vector<InfoColumn>& columns, bool) override { has_columns_ = !columns.empty(); }
  py::object begin(const py::object&) const override { return has_columns_ ? py::dict() : py::object(); }

 private:
  bool has_columns_ = false;
};

}  // namespace

std::unique_ptr<InfoLayout> make_info_layout(const std::string& name) {
  if (name == "gymnasium") return std::make_unique<GymnasiumInfo>();
  if (name == "envpool") return std::make_unique<EnvPoolInfo>();
  throw py::value_error("info_layout must be 'gymnasium' or 'envpool', got '" + name + "'");
}

}  // namespace fastvec::bindings
