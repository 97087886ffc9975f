#pragma once
// Result buffers. A Batch holds one recv()'s worth of rows: observations,
// rewards, flags, env ids, the env's info values (with their masks) and
// episode statistics, laid out as the arrays Python receives. Workers write rows; recv hands the whole Batch to Python
// (numpy arrays viewing it, owned through a shared_ptr), and the Batch is
// recycled only when Python has dropped every array viewing it.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace fastvec::core {

struct BatchLayout {
  int rows = 0;
  size_t obs_bytes = 0;     // bytes of one env's observation
  size_t reward_bytes = 4;  // float32 or float64 rewards
  bool with_final_obs = false;
  size_t info_bytes = 0;  // bytes of one row of the env's info values and masks (info_row_bytes)
};

class Batch {
 public:
  explicit Batch(const BatchLayout& layout) : layout_(layout), off_(plan(layout)) {
    data_ = static_cast<std::byte*>(::operator new(std::max<size_t>(off_.size, 1), std::align_val_t{kAlign}));
  }
  // Bytes a Batch of `layout` allocates.
  static size_t bytes(const BatchLayout& layout) { return plan(layout).size; }
  ~Batch() { ::operator delete(data_, std::align_val_t{kAlign}); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  const BatchLayout& layout() const { return layout_; }
  std::byte* obs(int row) { return data_ + off_.obs + row * layout_.obs_bytes; }
  std::byte* final_obs(int row) { return data_ + off_.final_obs + row * layout_.obs_bytes; }
  // The rewards, as the env's reward type (float or double).
  template <class Reward>
  Reward* reward() {
    return at<Reward>(off_.reward);
  }
  std::byte* reward_bytes() { return data_ + off_.reward; }
  double* episode_return() { return at<double>(off_.episode_return); }
  int32_t* episode_length() { return at<int32_t>(off_.episode_length); }
  int32_t* env_id() { return at<int32_t>(off_.env_id); }
  std::byte* info(int row) { return data_ + off_.info + static_cast<size_t>(row) * layout_.info_bytes; }
  // Same-step autoreset: the info values of the step that ended an episode
  // (info() has the new episode's).
  std::byte* final_info(int row) { return data_ + off_.final_info + static_cast<size_t>(row) * layout_.info_bytes; }
  bool* terminated() { return at<bool>(off_.terminated); }
  bool* truncated() { return at<bool>(off_.truncated); }
  bool* ended() { return at<bool>(off_.ended); }  // terminated || truncated: an episode ended

  // Copies row `from` into row `to` (every array of the row).
  void copy_row(int from, int to) {
    if (from == to) return;
    const size_t ob = layout_.obs_bytes, inf = layout_.info_bytes, rb = layout_.reward_bytes;
    std::memcpy(obs(to), obs(from), ob);
    if (layout_.with_final_obs) {
      std::memcpy(final_obs(to), final_obs(from), ob);
      std::memcpy(final_info(to), final_info(from), inf);
    }
    std::memcpy(info(to), info(from), inf);
    std::memcpy(reward_bytes() + to * rb, reward_bytes() + from * rb, rb);
    episode_return()[to] = episode_return()[from];
    episode_length()[to] = episode_length()[from];
    env_id()[to] = env_id()[from];
    terminated()[to] = terminated()[from];
    truncated()[to] = truncated()[from];
    ended()[to] = ended()[from];
  }

  // Copies row `from` of `src` into row `to` of `dst` (swap: exchanges the two rows), every array of the
  // row; both Batches of one layout. Called by the caller thread for rows no other thread writes.
  static void transfer_row(Batch& src, int from, Batch& dst, int to, bool swap) {
    const auto part = [swap](std::byte* a, std::byte* b, size_t n) {
      if (swap) {
        std::swap_ranges(a, a + n, b);
      } else {
        std::memcpy(b, a, n);
      }
    };
    const BatchLayout& l = src.layout_;
    const size_t rb = l.reward_bytes;
    const auto bytes = [](auto* p) { return reinterpret_cast<std::byte*>(p); };
    part(src.obs(from), dst.obs(to), l.obs_bytes);
    if (l.with_final_obs) {
      part(src.final_obs(from), dst.final_obs(to), l.obs_bytes);
      part(src.final_info(from), dst.final_info(to), l.info_bytes);
    }
    part(src.info(from), dst.info(to), l.info_bytes);
    part(src.reward_bytes() + from * rb, dst.reward_bytes() + to * rb, rb);
    part(bytes(src.episode_return() + from), bytes(dst.episode_return() + to), sizeof(double));
    part(bytes(src.episode_length() + from), bytes(dst.episode_length() + to), sizeof(int32_t));
    part(bytes(src.env_id() + from), bytes(dst.env_id() + to), sizeof(int32_t));
    part(bytes(src.terminated() + from), bytes(dst.terminated() + to), 1);
    part(bytes(src.truncated() + from), bytes(dst.truncated() + to), 1);
    part(bytes(src.ended() + from), bytes(dst.ended() + to), 1);
  }

  // Rows whose episode ended, counted by the writers (relaxed: read after the
  // slot's completion counter is acquired).
  std::atomic<int> num_ended{0};

 private:
  static constexpr size_t kAlign = 64;
  template <class T>
  T* at(size_t off) {
    return reinterpret_cast<T*>(data_ + off);
  }

  // Where each array starts in the allocation, and its size.
  struct Offsets {
    size_t obs, final_obs, reward, episode_return, episode_length, env_id, info, final_info, terminated, truncated,
        ended, size;
  };
  static Offsets plan(const BatchLayout& layout) {
    size_t off = 0;
    auto take = [&](size_t bytes) {
      size_t at = off;
      off += (bytes + kAlign - 1) / kAlign * kAlign;
      return at;
    };
    const size_t r = static_cast<size_t>(layout.rows);
    Offsets o{};
    o.obs = take(r * layout.obs_bytes);
    o.final_obs = take(layout.with_final_obs ? r * layout.obs_bytes : 0);
    o.reward = take(r * layout.reward_bytes);
    o.episode_return = take(r * sizeof(double));
    o.episode_length = take(r * sizeof(int32_t));
    o.env_id = take(r * sizeof(int32_t));
    o.info = take(r * layout.info_bytes);
    o.final_info = take(layout.with_final_obs ? r * layout.info_bytes : 0);
    o.terminated = take(r);
    o.truncated = take(r);
    o.ended = take(r);
    o.size = off;
    return o;
  }

  BatchLayout layout_;
  Offsets off_;
  std::byte* data_ = nullptr;
};

// Hands out Batches and takes back the ones Python released, so a step loop
// does not allocate (and page-fault) fresh buffers every step. Shared by the
// pool and by every Batch in Python's hands: it outlives the pool if needed.
// Thread-safe (Python may drop arrays on any thread).
class BatchRecycler : public std::enable_shared_from_this<BatchRecycler> {
 public:
  BatchRecycler(BatchLayout layout, size_t keep) : layout_(layout), keep_(keep) {}

  // Called by the recv thread.
  std::unique_ptr<Batch> take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<Batch> b = std::move(free_.back());
        free_.pop_back();
        b->num_ended.store(0, std::memory_order_relaxed);
        return b;
      }
    }
    return std::make_unique<Batch>(layout_);
  }

  // Gives `batch` to Python: it comes back here when the last owner drops it.
  std::shared_ptr<Batch> lend(std::unique_ptr<Batch> batch) {
    std::shared_ptr<BatchRecycler> self = shared_from_this();
    return std::shared_ptr<Batch>(batch.release(), [self](Batch* b) { self->give_back(b); });
  }

 private:
  void give_back(Batch* b) {
    std::unique_ptr<Batch> owned(b);
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < keep_) free_.push_back(std::move(owned));
  }

  const BatchLayout layout_;
  const size_t keep_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Batch>> free_;  // guarded by mu_
};

}  // namespace fastvec::core
