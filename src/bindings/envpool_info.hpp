#pragma once
// EnvPool's info layout (fastvec.envpool): env_id, players (a dict of env_id, one per player), the env's
// values, then the pool's elapsed_step; no masks.

#include "info_layout.hpp"

namespace fastvec::bindings {

class EnvPoolInfo final : public InfoLayout {
 public:
  bool elapsed_step() const override { return true; }

  void prepare(const std::vector<InfoColumn>& columns, bool masks) override {
    // EnvPool's keys, in its order, made once: each batch copies these tables and sets the values.
    players_template_[env_id_key_] = py::none();
    template_[env_id_key_] = py::none();
    template_[players_key_] = py::none();
    if (!masks)  // (with masks, a column no row has is left out)
      for (const InfoColumn& c : columns) template_[c.key] = py::none();
  }

  py::object begin(const py::object& env_id) const override {
    py::dict values = copy_dict(template_);
    py::dict players = copy_dict(players_template_);
    set_item(players, env_id_key_, env_id);
    set_item(values, env_id_key_, env_id);
    set_item(values, players_key_, players);
    return values;
  }

 private:
  py::object env_id_key_ = py::str("env_id"), players_key_ = py::str("players");
  py::dict template_, players_template_;
};

}  // namespace fastvec::bindings
