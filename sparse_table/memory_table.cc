// The in-memory backend. Each shard owns an absl::flat_hash_map (open
// addressing) from key to row index and an arena of fixed-stride float rows.
// The shard mutex guards both; it is the only lock a request takes per shard.

#include <cmath>
#include <cstring>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/hash.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

// Row layout (the accessor): [show, click, w, w_g2, v[dim], v_g2].
// Adagrad keeps one squared-gradient sum for the whole embedding, as
// PaddlePaddle's sparse Adagrad does: the row stays dim + 5 floats instead of
// 2 * dim + 4, and per-entry sums gain little on sparse features.
constexpr int kShow = 0, kClick = 1, kW = 2, kWG2 = 3, kV = 4;

class MemoryTable final : public SparseTable {
 public:
  explicit MemoryTable(const TableOptions& options)
      : options_(options),
        dim_(options.embedding_dim),
        stride_(dim_ + 5),
        shards_(options.num_shards) {}

  uint32_t pull_dim() const override { return dim_ + 1; }

  void Pull(absl::Span<const uint64_t> keys, bool is_training,
            float* out) override {
    ForEachShard(keys, [&](Shard& shard, absl::Span<const uint32_t> idx) {
      absl::MutexLock lock(&shard.mu);
      for (uint32_t i : idx) {
        float* dst = out + size_t{i} * pull_dim();
        const float* row =
            is_training ? FindOrCreate(shard, keys[i]) : Find(shard, keys[i]);
        if (row == nullptr) {
          std::memset(dst, 0, pull_dim() * sizeof(float));
        } else {
          dst[0] = row[kW];
          std::memcpy(dst + 1, row + kV, dim_ * sizeof(float));
        }
      }
    });
  }

  absl::StatusOr<PushResult> Push(const PushBatch& batch) override {
    const size_t n = batch.keys.size() * size_t{pull_dim()};
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(batch.grads[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gradient of key ", batch.keys[i / pull_dim()], " is not finite"));
      }
    }
    PushResult result;
    ForEachShard(batch.keys, [&](Shard& shard, absl::Span<const uint32_t> idx) {
      absl::MutexLock lock(&shard.mu);
      if (batch.sequence != 0) {
        uint64_t& last = shard.last_sequence[batch.writer_id];
        if (batch.sequence <= last) {
          result.duplicate_keys += idx.size();
          return;
        }
        last = batch.sequence;
      }
      for (uint32_t i : idx) {
        float* row = FindOrCreate(shard, batch.keys[i]);
        row[kShow] += batch.shows[i];
        row[kClick] += batch.clicks[i];
        Apply(row, batch.grads + size_t{i} * pull_dim());
      }
      result.applied_keys += idx.size();
    });
    return result;
  }

  TableStats Stats() const override {
    TableStats stats;
    for (const Shard& shard : shards_) {
      absl::MutexLock lock(&shard.mu);
      stats.rows += shard.index.size();
      stats.memory_bytes +=
          shard.arena.capacity() * sizeof(float) +
          shard.index.capacity() * (sizeof(uint64_t) + sizeof(uint32_t) + 1);
    }
    return stats;
  }

 private:
  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<uint64_t, uint32_t> index ABSL_GUARDED_BY(mu);
    std::vector<float> arena ABSL_GUARDED_BY(mu);
    // Last applied push sequence per writer (exactly-once).
    absl::flat_hash_map<uint64_t, uint64_t> last_sequence ABSL_GUARDED_BY(mu);
  };

  // Groups key positions by shard, then calls fn once per non-empty shard.
  template <typename Fn>
  void ForEachShard(absl::Span<const uint64_t> keys, Fn fn) {
    std::vector<std::vector<uint32_t>> by_shard(shards_.size());
    for (uint32_t i = 0; i < keys.size(); ++i) {
      by_shard[ShardOf(keys[i], options_.num_shards)].push_back(i);
    }
    for (size_t s = 0; s < shards_.size(); ++s) {
      if (!by_shard[s].empty()) fn(shards_[s], by_shard[s]);
    }
  }

  const float* Find(Shard& shard, uint64_t key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    auto it = shard.index.find(key);
    return it == shard.index.end() ? nullptr : &shard.arena[it->second];
  }

  float* FindOrCreate(Shard& shard, uint64_t key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    auto [it, inserted] = shard.index.try_emplace(key, shard.arena.size());
    if (inserted) {
      shard.arena.resize(shard.arena.size() + stride_);
      InitRow(key, &shard.arena[it->second]);
    }
    return &shard.arena[it->second];
  }

  // Deterministic in the key: a restarted or re-run job creates equal rows.
  void InitRow(uint64_t key, float* row) const {
    row[kWG2] = options_.initial_accumulator;
    row[kV + dim_] = options_.initial_accumulator;
    uint64_t state = key;
    for (uint32_t j = 0; j < dim_; ++j) {
      state += 0x9e3779b97f4a7c15ULL;
      const double unit = (Mix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
      row[kV + j] = static_cast<float>((2 * unit - 1) * options_.init_range);
    }
  }

  void Apply(float* row, const float* grad) const {
    const float lr = options_.learning_rate;
    const float gw = grad[0] + options_.l2 * row[kW];
    if (options_.rule == OptimizerRule::kSgd) {
      row[kW] -= lr * gw;
      for (uint32_t j = 0; j < dim_; ++j) {
        row[kV + j] -= lr * (grad[1 + j] + options_.l2 * row[kV + j]);
      }
      return;
    }
    row[kWG2] += gw * gw;
    row[kW] -= lr * gw / std::sqrt(row[kWG2]);
    if (dim_ == 0) return;
    float sq = 0;
    for (uint32_t j = 0; j < dim_; ++j) {
      const float g = grad[1 + j] + options_.l2 * row[kV + j];
      sq += g * g;
    }
    float& v_g2 = row[kV + dim_];
    v_g2 += sq / dim_;
    const float scale = lr / std::sqrt(v_g2);
    for (uint32_t j = 0; j < dim_; ++j) {
      row[kV + j] -= scale * (grad[1 + j] + options_.l2 * row[kV + j]);
    }
  }

  const TableOptions options_;
  const uint32_t dim_;
  const uint32_t stride_;
  std::deque<Shard> shards_;  // deque: Shard holds a mutex and cannot move
};

}  // namespace

std::unique_ptr<SparseTable> NewMemoryTable(const TableOptions& options) {
  return std::make_unique<MemoryTable>(options);
}

}  // namespace sampan
