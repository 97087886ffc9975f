#pragma once
// Result buffers. A Batch holds one recv()'s worth of rows: observations,
// rewards, flags, env ids, the env's info values and episode statistics, laid out as the arrays
// Python receives. Workers write rows; recv hands the whole Batch to Python
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
  size_t obs_bytes = 0;  // bytes of one env's observation
  bool with_final_obs = false;
  int info_fields = 0;  // int32 values per row (Spec::info_names)
};

class Batch {
 public:
  explicit Batch(const BatchLayout& layout) : layout_(layout) {
    size_t off = 0;
    auto take = [&](size_t bytes) {
      size_t at = off;
      off += (bytes + kAlign - 1) / kAlign * kAlign;
      return at;
    };
    const size_t r = static_cast<size_t>(layout.rows);
    obs_ = take(r * layout.obs_bytes);
    final_obs_ = take(layout.with_final_obs ? r * layout.obs_bytes : 0);
    reward_ = take(r * sizeof(float));
    episode_return_ = take(r * sizeof(double));
    episode_length_ = take(r * sizeof(int32_t));
    env_id_ = take(r * sizeof(int32_t));
    info_ = take(r * layout.info_fields * sizeof(int32_t));
    final_info_ = take(layout.with_final_obs ? r * layout.info_fields * sizeof(int32_t) : 0);
    terminated_ = take(r);
    truncated_ = take(r);
    done_ = take(r);
    size_ = off;
    data_ = static_cast<std::byte*>(::operator new(std::max<size_t>(size_, 1), std::align_val_t{kAlign}));
  }
  ~Batch() { ::operator delete(data_, std::align_val_t{kAlign}); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  const BatchLayout& layout() const { return layout_; }
  std::byte* obs(int row) { return data_ + obs_ + row * layout_.obs_bytes; }
  std::byte* final_obs(int row) { return data_ + final_obs_ + row * layout_.obs_bytes; }
  float* reward() { return at<float>(reward_); }
  double* episode_return() { return at<double>(episode_return_); }
  int32_t* episode_length() { return at<int32_t>(episode_length_); }
  int32_t* env_id() { return at<int32_t>(env_id_); }
  int32_t* info(int row) { return at<int32_t>(info_) + static_cast<size_t>(row) * layout_.info_fields; }
  // Same-step autoreset: the info values of the step that ended an episode
  // (info() has the new episode's).
  int32_t* final_info(int row) { return at<int32_t>(final_info_) + static_cast<size_t>(row) * layout_.info_fields; }
  bool* terminated() { return at<bool>(terminated_); }
  bool* truncated() { return at<bool>(truncated_); }
  bool* done() { return at<bool>(done_); }  // terminated || truncated: an episode ended

  // Rows whose episode ended, counted by the writers (relaxed: read after the
  // slot's completion counter is acquired).
  std::atomic<int> num_done{0};

 private:
  static constexpr size_t kAlign = 64;
  template <class T>
  T* at(size_t off) {
    return reinterpret_cast<T*>(data_ + off);
  }

  BatchLayout layout_;
  size_t obs_ = 0, final_obs_ = 0, reward_ = 0, episode_return_ = 0, episode_length_ = 0;
  size_t env_id_ = 0, info_ = 0, final_info_ = 0, terminated_ = 0, truncated_ = 0, done_ = 0, size_ = 0;
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
        b->num_done.store(0, std::memory_order_relaxed);
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
