// Unit tests of src/core and the shared env math, without Python. Built by
// tests/cpp/CMakeLists.txt and run by tests/core/test_cpp_core.py (and under a
// sanitizer by scripts/sanitize.sh). Exit status 0 when every check passes.

#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "core/pool.hpp"
#include "core/thread_tuner.hpp"
#include "envs/atari/divide.hpp"
#include "envs/classic_control/cartpole.hpp"
#include "envs/fast_math.hpp"

using namespace fastvec;

static int failures = 0;
#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      std::printf("FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);  \
      ++failures;                                                    \
    }                                                                \
  } while (0)

static void test_sincos_matches_libm() {
  std::mt19937_64 gen(1);
  double worst = 0;
  for (double scale : {1.0, 10.0, 1e3, 1e6}) {
    std::uniform_real_distribution<double> dist(-scale, scale);
    for (int k = 0; k < 200000; ++k) {
      const double x = dist(gen);
      double s, c;
      envs::sincos(x, &s, &c);
      worst = std::max({worst, std::fabs(s - std::sin(x)), std::fabs(c - std::cos(x))});
    }
  }
  std::printf("sincos: worst abs error vs libm %.3g\n", worst);
  CHECK(worst <= 2 * 2.220446049250313e-16);  // two ulps of 1
  double s, c;
  envs::sincos(3e9, &s, &c);  // beyond: error grows as |x| * 1e-16
  CHECK(std::fabs(s - std::sin(3e9)) < 1e-6 && std::fabs(c - std::cos(3e9)) < 1e-6);
  envs::sincos(NAN, &s, &c);
  CHECK(std::isnan(s) && std::isnan(c));
}

// Steps a CartPole pool with a fixed action pattern and returns every
// observation, ordered by env, for determinism checks.
static std::vector<float> run_cartpole(int num_envs, int batch_size, int threads, int block, int steps,
                                       bool adapt = false) {
  core::PoolConfig cfg;
  cfg.adapt_threads = adapt;
  cfg.initial_threads = 1;  // (with adapt) the tuner probes up, and back, while the pool runs
  cfg.num_envs = num_envs;
  cfg.batch_size = batch_size;
  cfg.num_threads = threads;
  cfg.block_size = block;
  cfg.max_episode_steps = 50;
  cfg.seed = 42;
  core::Pool<envs::CartPole> pool(cfg, core::Options(envs::CartPole::options(), {}));
  std::vector<int32_t> all(num_envs);
  for (int i = 0; i < num_envs; ++i) all[i] = i;
  std::vector<int> count(num_envs, 0);
  std::vector<float> out(static_cast<size_t>(num_envs) * steps * 4, 0.f);
  pool.send_reset(all.data(), num_envs, nullptr, false);
  int received = 0;
  while (received < num_envs * steps) {
    std::shared_ptr<core::Batch> b = pool.recv();
    std::vector<int64_t> actions;
    std::vector<int32_t> ids;
    for (int r = 0; r < batch_size; ++r) {
      const int e = b->env_id()[r];
      const float* obs = reinterpret_cast<const float*>(b->obs(r));
      if (count[e] < steps) {
        for (int j = 0; j < 4; ++j) out[(static_cast<size_t>(e) * steps + count[e]) * 4 + j] = obs[j];
        ++received;
      }
      actions.push_back((e + count[e]) % 3 == 0);
      ids.push_back(e);
      ++count[e];
    }
    pool.send_step(actions.data(), ids.data(), batch_size);
  }
  pool.close();
  return out;
}

static void test_determinism_across_threads_blocks_and_async() {
  const std::vector<float> ref = run_cartpole(16, 16, 1, 16, 120);
  CHECK(run_cartpole(16, 16, 2, 4, 120) == ref);
  CHECK(run_cartpole(16, 16, 3, 1, 120) == ref);
  CHECK(run_cartpole(16, 4, 2, 2, 120) == ref);
  CHECK(run_cartpole(16, 8, 4, 1, 120) == ref);
  // Long enough (~0.4 s) for the thread tuner to change the count of threads that step, both ways.
  const std::vector<float> long_ref = run_cartpole(16, 16, 1, 16, 40000);
  CHECK(run_cartpole(16, 16, 2, 1, 40000, true) == long_ref);
  CHECK(run_cartpole(16, 4, 2, 1, 40000, true) == long_ref);
}

static void test_usage_errors() {
  core::PoolConfig cfg;
  cfg.num_envs = 4;
  cfg.batch_size = 2;
  cfg.num_threads = 2;
  cfg.block_size = 1;
  core::Pool<envs::CartPole> pool(cfg, core::Options(envs::CartPole::options(), {}));
  bool threw = false;
  try {
    pool.recv();
  } catch (const core::UsageError&) {
    threw = true;
  }
  CHECK(threw);
  std::vector<int32_t> ids = {0, 1, 2, 3};
  pool.send_reset(ids.data(), 4, nullptr, false);
  pool.recv();
  int64_t a = 0;
  threw = false;
  int32_t bad = 7;
  try {
    pool.send_step(&a, &bad, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  pool.close();
  pool.close();
  threw = false;
  try {
    pool.send_step(&a, ids.data(), 1);
  } catch (const core::UsageError&) {
    threw = true;
  }
  CHECK(threw);
}

// The Atari resize rounds with DivU16: exact for every 16-bit dividend and
// every divisor it can get (and far beyond).
static void test_divu16_is_exact() {
  long wrong = 0;
  for (uint32_t d = 2; d <= 2048; ++d) {
    const envs::DivU16 divide(d);
    for (uint32_t x = 0; x <= 65535; ++x) wrong += divide(static_cast<uint16_t>(x)) != x / d;
  }
  for (uint32_t d : {4095u, 4096u, 4097u, 33600u, 65534u, 65535u}) {
    const envs::DivU16 divide(d);
    for (uint32_t x = 0; x <= 65535; ++x) wrong += divide(static_cast<uint16_t>(x)) != x / d;
  }
  CHECK(wrong == 0);
}

// An env's options: defaults from its table, kinds and ranges checked, and a
// name the table lacks refused on both sides (caller and env).
static void test_options_follow_the_table() {
  using K = core::OptionSpec::Kind;
  const core::OptionTable table = {{"steps", K::kInt, 4, 1, 64}, {"p", K::kReal, 0.25, 0, 1}, {"on", K::kBool, 1},
                                   {"rom", K::kString}};
  const core::Options defaults(table, {});
  CHECK(defaults.integer("steps") == 4 && defaults.get("p") == 0.25 && defaults.flag("on") && defaults.text("rom").empty());
  const core::Options given(table, {{"steps", 8}, {"on", 0}}, {{"rom", "pong.bin"}});
  CHECK(given.integer("steps") == 8 && !given.flag("on") && given.text("rom") == "pong.bin");
  const auto refused = [&](std::map<std::string, double> values, const char* needle) {
    try {
      core::Options o(table, values);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what()).find(needle) != std::string::npos;
    }
    return false;
  };
  CHECK(refused({{"stesp", 8}}, "unexpected option 'stesp' (accepted: steps, p, on, rom)"));
  CHECK(refused({{"steps", 0}}, "steps must be an integer in [1, 64], got 0"));
  CHECK(refused({{"steps", 2.5}}, "steps must be an integer"));
  CHECK(refused({{"p", 1.5}}, "p must be in [0, 1]"));
  CHECK(refused({{"p", NAN}}, "p must be in [0, 1]"));
  CHECK(refused({{"on", 2}}, "on must be a bool"));
  bool undeclared = false;
  try {
    (void)defaults.get("stpes");  // a typo inside an env is a bug, never a silent default
  } catch (const std::logic_error&) {
    undeclared = true;
  }
  CHECK(undeclared);
}

// Drives a ThreadTuner through `calls` calls of 10 ms each, on a machine
// where `rate(k)` env steps a second come from k threads and the process is
// preempted `preempted_per_s` times a second. Returns the share of calls
// run at each count (index k), and the tuner's last count.
template <class Rate>
static std::vector<double> run_tuner(core::ThreadTuner& tuner, int calls, Rate&& rate, double preempted_per_s,
                                     int64_t& now_ns, double& preempted) {
  std::vector<double> share(8, 0.0);
  int k = tuner.active();
  for (int c = 0; c < calls; ++c) {
    now_ns += 10'000'000;
    preempted += preempted_per_s * 0.01;
    share[k] += 1.0 / calls;
    k = tuner.on_call(static_cast<int64_t>(rate(k) * 0.01), now_ns, [&] { return static_cast<int64_t>(preempted); });
  }
  return share;
}

static void test_thread_tuner_follows_the_throughput() {
  int64_t now = 0;
  double preempted = 0;
  // A fixed count never moves.
  core::ThreadTuner fixed(2, 2, 2);
  CHECK(!fixed.enabled());
  CHECK(run_tuner(fixed, 1000, [](int k) { return k == 1 ? 2e6 : 1e6; }, 500, now, preempted)[2] > 0.999999);

  // Idle machine (kernel threads preempt a 2-thread pool ~30 times a second, in bursts): 2 threads stay, with
  // no probe down at all, even if 1 would be faster.
  core::ThreadTuner idle(1, 2, 2);
  CHECK(run_tuner(idle, 5000, [](int k) { return k == 1 ? 1.2e6 : 1e6; }, 30, now, preempted)[2] > 0.999999);
  core::ThreadTuner bursts(1, 2, 2);  // 3 preemptions in one 40 ms epoch in 20 (75 a second then)
  std::vector<double> b(8, 0.0);
  for (int burst = 0; burst < 50; ++burst) {
    b = run_tuner(bursts, 76, [](int k) { return k == 1 ? 1.2e6 : 1e6; }, 0, now, preempted);
    preempted += 3;
  }
  CHECK(b[2] > 0.999999 && bursts.active() == 2);

  // Shared cores, one thread faster: it moves to 1 and spends almost all its time there.
  core::ThreadTuner shared(1, 2, 2);
  std::vector<double> s = run_tuner(shared, 5000, [](int k) { return k == 1 ? 1e6 : 0.8e6; }, 200, now, preempted);
  std::printf("tuner, one core taken, 1 thread faster: %.3f of calls at 1 thread\n", s[1]);
  CHECK(s[1] > 0.95 && shared.active() == 1);

  // The load goes away (1 thread is no longer preempted and 2 are faster): back to 2 within the longest
  // wait between probes (64 epochs of 40 ms).
  s = run_tuner(shared, 1000, [](int k) { return k == 1 ? 1e6 : 1.8e6; }, 20, now, preempted);
  std::printf("tuner, load gone: %.3f of the next 10 s at 2 threads\n", s[2]);
  CHECK(s[2] > 0.7 && shared.active() == 2);

  // Shared cores, two threads still faster: it stays at 2 (probes down come rarely and do not stick).
  core::ThreadTuner still(1, 2, 2);
  s = run_tuner(still, 5000, [](int k) { return k == 1 ? 1e6 : 1.3e6; }, 200, now, preempted);
  std::printf("tuner, one core taken, 2 threads faster: %.3f of calls at 2 threads\n", s[2]);
  CHECK(s[2] > 0.95 && still.active() == 2);

  // A noisy machine (each 10 ms call +-30%): the faster count (1, by 15%) still holds nearly all the time.
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> noise(0.7, 1.3);
  core::ThreadTuner noisy(1, 2, 2);
  s = run_tuner(noisy, 20000, [&](int k) { return (k == 1 ? 1.15e6 : 1e6) * noise(gen); }, 200, now, preempted);
  std::printf("tuner, noisy machine, 1 thread 15%% faster: %.3f of calls at 1 thread\n", s[1]);
  CHECK(s[1] > 0.9);

  // A tie is kept: no flapping between counts that are equally fast.
  core::ThreadTuner tie(1, 4, 4);
  s = run_tuner(tie, 5000, [](int) { return 1e6; }, 200, now, preempted);
  CHECK(s[4] > 0.95 && tie.active() == 4);

  // Many threads: it walks down one at a time to the best count, and stays.
  core::ThreadTuner walk(1, 4, 4);
  s = run_tuner(walk, 5000, [](int k) { return std::vector<double>{0, 1.2e6, 1.5e6, 1.3e6, 1.1e6}[k]; }, 200, now,
                preempted);
  CHECK(s[2] > 0.9 && walk.active() == 2);
}

int main() {
  test_options_follow_the_table();
  test_divu16_is_exact();
  test_sincos_matches_libm();
  test_determinism_across_threads_blocks_and_async();
  test_usage_errors();
  test_thread_tuner_follows_the_throughput();
  if (failures) {
    std::printf("%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all core checks passed\n");
  return 0;
}
