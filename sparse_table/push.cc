// ShardedTable::Push and the recovery replay that shares its steps.

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "sparse_table/sharded_table.h"

namespace sampan {
namespace {

// Locks the shards of `groups` in ascending order; unlocks on destruction.
class ShardLocks {
 public:
  ShardLocks(std::deque<Shard>& shards, const std::vector<Group>& groups)
      : shards_(shards), groups_(groups) {
    for (const Group& g : groups_) shards_[g.shard].mu.lock();
  }
  ~ShardLocks() {
    for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
      shards_[it->shard].mu.unlock();
    }
  }

 private:
  std::deque<Shard>& shards_;
  const std::vector<Group>& groups_;
};

}  // namespace

absl::StatusOr<PushResult> ShardedTable::Push(const PushBatch& b) {
  PushResult result;
  std::vector<uint8_t> skip;
  if (absl::Status st = CheckFinite(b, &skip, &result); !st.ok()) return st;
  if (store_ == nullptr) {
    PushInMemory(b, skip, result);
    duplicates_.fetch_add(result.duplicate_keys, std::memory_order_relaxed);
    unadmitted_.fetch_add(result.unadmitted_keys, std::memory_order_relaxed);
    return result;
  }
  // After a failed log write nothing more is applied (reopen to recover).
  if (log_ != nullptr) {
    if (absl::Status st = log_->status(); !st.ok()) return st;
  }
  std::vector<Group> groups = GroupByShard(b.keys);
  uint64_t wait_lsn = 0;
  absl::Status st;
  if (b.keys.size() <= kMaxKeysPerApply) {
    st = ApplyShards(b, skip, std::move(groups), result, &wait_lsn);
  } else {
    // A push holds the locks of every shard it touches while it computes,
    // and pulls of those shards wait: a merged push of 26 k keys held them
    // 15-37 ms (pull p99 twice the target at half load). So a large one
    // applies in runs of whole shards, each its own log record; a shard
    // still applies all of its keys, and its sequence, at once.
    for (size_t begin = 0; begin < groups.size() && st.ok();) {
      size_t end = begin + 1, keys = groups[begin].idx.size();
      while (end < groups.size() &&
             keys + groups[end].idx.size() <= kMaxKeysPerApply) {
        keys += groups[end++].idx.size();
      }
      PushSlice slice(b, skip, groups, begin, end, pull_dim());
      st = ApplyShards(slice.batch, slice.skip, std::move(slice.groups), result,
                       &wait_lsn);
      begin = end;
    }
  }
  duplicates_.fetch_add(result.duplicate_keys, std::memory_order_relaxed);
  unadmitted_.fetch_add(result.unadmitted_keys, std::memory_order_relaxed);
  if (!st.ok()) return st;
  if (log_ != nullptr) {
    if (absl::Status w = log_->WaitDurable(wait_lsn); !w.ok()) return w;
  }
  return result;
}

ShardedTable::PushSlice::PushSlice(const PushBatch& b,
                                   const std::vector<uint8_t>& all_skip,
                                   const std::vector<Group>& all, size_t begin,
                                   size_t end, uint32_t pd) {
  for (size_t g = begin; g < end; ++g) {
    Group& mine = groups.emplace_back();
    mine.shard = all[g].shard;
    for (uint32_t i : all[g].idx) {
      mine.idx.push_back(keys.size());
      keys.push_back(b.keys[i]);
      grads.insert(grads.end(), b.grads + size_t{i} * pd,
                   b.grads + size_t{i + 1} * pd);
      shows.push_back(b.shows[i]);
      clicks.push_back(b.clicks[i]);
      skip.push_back(all_skip[i]);
    }
  }
  batch.keys = keys;
  batch.grads = grads.data();
  batch.shows = shows.data();
  batch.clicks = clicks.data();
  batch.writer_id = b.writer_id;
  batch.sequence = b.sequence;
}

// One log record's worth: the rows of `groups` computed, logged (or written
// through) and installed under their shard locks. *wait_lsn: the record's.
absl::Status ShardedTable::ApplyShards(const PushBatch& b,
                                       const std::vector<uint8_t>& skip,
                                       std::vector<Group> groups,
                                       PushResult& result, uint64_t* wait_lsn) {
  std::string record;
  if (log_ != nullptr) {  // encoded before the locks: they guard no input
    record = RedoLog::NewRecord(b.keys.size() * (16 + 4 * pull_dim()) + 32);
    EncodePush(b, pull_dim(), &record);
  }
  PushWork w;
  w.groups = std::move(groups);
  if (absl::Status st = Prefetch(b, skip, w); !st.ok()) return st;
  {
    ShardLocks locks(shards_, w.groups);
    if (absl::Status st = Compute(b, skip, 0, w, result); !st.ok()) return st;
    uint64_t lsn = 0;
    if (log_ != nullptr) {
      // A replay of a push already logged must still wait for that record.
      lsn = w.live.empty() ? log_->last_lsn() : log_->Append(std::move(record));
      *wait_lsn = std::max(*wait_lsn, lsn);
    } else if (absl::Status st = WriteThrough(b, w); !st.ok()) {
      return st;
    }
    Install(b, w, lsn);
  }
  return log_ != nullptr ? Backpressure(w) : absl::OkStatus();
}

// Nothing can fail once the gradients are checked (no log, no store), so
// rows change where they live, under the shard locks: no scratch copy out and
// back, no second index lookup (the copies and the unique-key map were a
// third of a local FM step's table time). Same results as Compute + Install,
// duplicates and admission included: each occurrence of a key applies its
// gradient in turn; a missing key asks admission once per push.
void ShardedTable::PushInMemory(const PushBatch& b,
                                const std::vector<uint8_t>& skip,
                                PushResult& result) {
  absl::flat_hash_set<uint64_t> refused;  // admission said no in this push
  // One shard lock at a time: exactly-once and snapshots need each shard's
  // rows and sequence to change together, not every shard's at once, and a
  // push holding all of them stalled every pull of the table (a pserver's
  // gRPC threads, a local trainer's other threads) for the whole push.
  const PullPositions* p = b.positions;
  if (p != nullptr && PositionsFit(b)) {
    uint32_t begin = 0;
    for (size_t g = 0; g < p->group_shard.size(); ++g) {
      PushShardInMemory(b, skip, p->group_shard[g], p->order.data() + begin,
                        p->group_end[g] - begin, p, p->group_epoch[g], refused,
                        result);
      begin = p->group_end[g];
    }
    return;
  }
  for (const Group& g : GroupByShard(b.keys)) {
    PushShardInMemory(b, skip, g.shard, g.idx.data(), g.idx.size(), nullptr, 0,
                      refused, result);
  }
}

// The positions are this table's, for this push's keys (the same sequence,
// by fingerprint: a foreign grouping would put keys in other shards'
// locks), and well formed.
bool ShardedTable::PositionsFit(const PushBatch& b) const {
  const PullPositions& p = *b.positions;
  const size_t n = b.keys.size();
  if (p.table != id_ || p.num_keys != n || p.order.size() != n ||
      p.slot.size() != n || p.group_end.size() != p.group_shard.size() ||
      p.group_epoch.size() != p.group_shard.size() ||
      p.keys_fingerprint != KeysFingerprint(b.keys)) {
    return false;
  }
  uint32_t begin = 0;
  for (size_t g = 0; g < p.group_shard.size(); ++g) {
    if (p.group_end[g] < begin || p.group_shard[g] >= o_.num_shards) {
      return false;
    }
    begin = p.group_end[g];
  }
  return begin == n;
}

// How many keys ahead a positions push prefetches rows: enough to cover a
// memory latency at ~20 ns a key.
constexpr size_t kPushPrefetch = 8;

void ShardedTable::PushShardInMemory(const PushBatch& b,
                                     const std::vector<uint8_t>& skip,
                                     uint32_t s, const uint32_t* idx, size_t n,
                                     const PullPositions* positions,
                                     uint64_t epoch,
                                     absl::flat_hash_set<uint64_t>& refused,
                                     PushResult& result) {
  const uint32_t pd = pull_dim();
  Shard& sh = shards_[s];
  std::lock_guard<std::mutex> lock(sh.mu);
  if (b.sequence != 0) {
    auto [it, inserted] = sh.last_sequence.try_emplace(b.writer_id, 0);
    if (!inserted && b.sequence <= it->second) {
      result.duplicate_keys += n;
      return;
    }
    it->second = b.sequence;
  }
  // Until a row leaves the shard, a slot keeps its key's row.
  const bool recorded = positions != nullptr && epoch == sh.evict_epoch;
  const uint32_t slots = sh.slot_key.size();
  for (size_t k = 0; k < n; ++k) {
    // Known slots let the rows a few keys ahead be on their way.
    if (recorded && k + kPushPrefetch < n) {
      const uint32_t ahead = positions->slot[idx[k + kPushPrefetch]];
      if (ahead < slots) {
        const float* row = sh.rows[ahead];
        __builtin_prefetch(row);
        __builtin_prefetch(row + 16);
      }
    }
    const uint32_t i = idx[k];
    if (skip[i]) continue;
    const uint64_t key = b.keys[i];
    uint32_t slot = recorded ? positions->slot[i] : kNoSlot;
    if (slot >= slots || sh.slot_key[slot] != key) {
      slot = sh.index.Find(key);
    }
    if (slot == HashIndex::kEmpty) {
      if (refused.contains(key) || !sh.admission.OnPush(key)) {
        refused.insert(key);
        ++result.unadmitted_keys;
        continue;
      }
      slot = Insert(sh, key, true);
      acc_.InitRow(key, sh.rows[slot]);
    }
    sh.changed[slot] = 1;
    acc_.Push(key, sh.rows[slot], b.grads + size_t{i} * pd, b.shows[i],
              b.clicks[i]);
    ++result.applied_keys;
  }
  ++sh.version;
}

absl::Status ShardedTable::ReplayPush(uint64_t lsn, const PushBatch& b) {
  PushResult result;
  std::vector<uint8_t> skip;
  // A batch rejected live was never logged; skip keys as live did.
  if (!CheckFinite(b, &skip, &result).ok()) return absl::OkStatus();
  PushWork w;
  w.groups = GroupByShard(b.keys);
  {
    ShardLocks locks(shards_, w.groups);
    if (absl::Status st = Compute(b, skip, lsn, w, result); !st.ok()) {
      return st;
    }
    Install(b, w, lsn);
  }
  return Backpressure(w);
}

absl::Status ShardedTable::CheckFinite(const PushBatch& b,
                                       std::vector<uint8_t>* skip,
                                       PushResult* result) {
  skip->assign(b.keys.size(), 0);
  for (size_t i = 0; i < b.keys.size(); ++i) {
    if (Finite(b, i)) continue;
    rejected_.fetch_add(1, std::memory_order_relaxed);
    if (o_.non_finite == NonFinitePolicy::kRejectBatch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient, show or click of key ", b.keys[i], " is not finite"));
    }
    (*skip)[i] = 1;
    ++result->rejected_keys;
  }
  return absl::OkStatus();
}

absl::Status ShardedTable::Prefetch(const PushBatch& b,
                                    const std::vector<uint8_t>& skip,
                                    PushWork& w) {
  if (store_ == nullptr) return absl::OkStatus();
  std::vector<uint64_t> keys;
  w.epochs.resize(w.groups.size());
  for (size_t g = 0; g < w.groups.size(); ++g) {
    Shard& sh = shards_[w.groups[g].shard];
    std::lock_guard<std::mutex> lock(sh.mu);
    w.epochs[g] = sh.evict_epoch;
    for (uint32_t i : w.groups[g].idx) {
      if (!skip[i] && sh.index.Find(b.keys[i]) == HashIndex::kEmpty) {
        keys.push_back(b.keys[i]);
      }
    }
  }
  if (keys.empty()) return absl::OkStatus();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<std::string> values;
  if (absl::Status st = store_->MultiGet(keys, &values); !st.ok()) return st;
  w.prefetched.reserve(keys.size());
  for (size_t j = 0; j < keys.size(); ++j) {
    w.prefetched.emplace(keys[j], std::move(values[j]));
  }
  return absl::OkStatus();
}

// Picks the shards that apply the push (replay_lsn > 0: those whose cut is
// below it) and computes every changed row into w.scratch.
absl::Status ShardedTable::Compute(const PushBatch& b,
                                   const std::vector<uint8_t>& skip,
                                   uint64_t replay_lsn, PushWork& w,
                                   PushResult& result) {
  struct Miss {
    uint32_t u;  // unique key index
    const std::string* value;
  };
  std::vector<Miss> misses;
  std::vector<uint64_t> fetch_keys;  // misses without a usable prefetch
  std::vector<size_t> fetch_at;
  // Sized up front: growing them key by key cost a push ~10% of its time.
  std::vector<uint32_t> unique_of(b.keys.size());  // key i -> its u
  w.slot_of.reserve(b.keys.size());
  w.ukeys.reserve(b.keys.size());
  w.scratch.reserve(b.keys.size() * stride_);
  for (size_t gi = 0; gi < w.groups.size(); ++gi) {
    const Group& g = w.groups[gi];
    Shard& sh = shards_[g.shard];
    if (replay_lsn != 0 && replay_lsn <= sh.applied_lsn) continue;
    if (b.sequence != 0) {
      auto it = sh.last_sequence.find(b.writer_id);
      if (it != sh.last_sequence.end() && b.sequence <= it->second) {
        result.duplicate_keys += g.idx.size();
        continue;
      }
    }
    w.live.push_back(&g);
    const bool prefetch_valid =
        gi < w.epochs.size() && w.epochs[gi] == sh.evict_epoch;
    for (uint32_t i : g.idx) {
      if (skip[i]) continue;
      auto [it, inserted] = w.slot_of.try_emplace(b.keys[i], w.ukeys.size());
      unique_of[i] = it->second;
      if (!inserted) continue;
      w.ukeys.push_back(b.keys[i]);
      w.ushard.push_back(g.shard);
      w.admitted.push_back(1);
      w.scratch.resize(w.scratch.size() + stride_);
      float* row = &w.scratch[w.scratch.size() - stride_];
      if (const float* hot = Find(sh, b.keys[i])) {
        std::memcpy(row, hot, stride_ * sizeof(float));
        continue;
      }
      const std::string* value = nullptr;
      if (prefetch_valid) {
        auto pre = w.prefetched.find(b.keys[i]);
        if (pre != w.prefetched.end()) value = &pre->second;
      }
      if (value == nullptr) {
        fetch_at.push_back(misses.size());
        fetch_keys.push_back(b.keys[i]);
      }
      misses.push_back({uint32_t(w.ukeys.size() - 1), value});
    }
  }
  std::vector<std::string> values(fetch_keys.size());
  if (store_ != nullptr && !fetch_keys.empty()) {
    if (absl::Status st = store_->MultiGet(fetch_keys, &values); !st.ok()) {
      return st;
    }
  }
  for (size_t f = 0; f < fetch_at.size(); ++f) {
    misses[fetch_at[f]].value = &values[f];
  }
  for (const Miss& m : misses) {
    const uint32_t u = m.u;
    float* row = &w.scratch[size_t{u} * stride_];
    if (!m.value->empty()) {
      if (!acc_.Load(reinterpret_cast<const float*>(m.value->data()),
                     m.value->size() / sizeof(float), row)) {
        return absl::DataLossError(
            absl::StrCat("row of key ", w.ukeys[u], " has a bad size"));
      }
    } else if (shards_[w.ushard[u]].admission.OnPush(w.ukeys[u])) {
      acc_.InitRow(w.ukeys[u], row);
    } else {
      w.admitted[u] = 0;
    }
  }
  const uint32_t pd = pull_dim();
  for (const Group* g : w.live) {
    for (uint32_t i : g->idx) {
      if (skip[i]) continue;
      const uint32_t u = unique_of[i];
      if (!w.admitted[u]) {
        ++result.unadmitted_keys;
        continue;
      }
      acc_.Push(b.keys[i], &w.scratch[size_t{u} * stride_], b.grads + i * pd,
                b.shows[i], b.clicks[i]);
      ++result.applied_keys;
    }
  }
  return absl::OkStatus();
}

// RocksDB WAL mode: the rows and sequences as one WriteBatch, before the
// hot tier shows them.
absl::Status ShardedTable::WriteThrough(const PushBatch& b, const PushWork& w) {
  if (store_ == nullptr || w.live.empty()) return absl::OkStatus();
  rocksdb::WriteBatch wb;
  for (size_t u = 0; u < w.ukeys.size(); ++u) {
    if (!w.admitted[u]) continue;
    const float* row = &w.scratch[u * stride_];
    store_->PutRow(&wb, w.ukeys[u], row, acc_.stored_floats(row));
  }
  if (b.sequence != 0) {
    for (const Group* g : w.live) {
      store_->PutSequence(&wb, g->shard, b.writer_id, b.sequence);
    }
  }
  return store_->Write(&wb);
}

// Makes the computed rows and sequences visible; lsn > 0 marks them dirty
// (redo log mode).
void ShardedTable::Install(const PushBatch& b, const PushWork& w,
                           uint64_t lsn) {
  const bool redo = log_ != nullptr || lsn != 0;
  for (size_t u = 0; u < w.ukeys.size(); ++u) {
    if (!w.admitted[u]) continue;
    Shard& sh = shards_[w.ushard[u]];
    uint32_t slot = sh.index.Find(w.ukeys[u]);
    if (slot == HashIndex::kEmpty) slot = Insert(sh, w.ukeys[u], true);
    std::memcpy(sh.rows[slot], &w.scratch[u * stride_],
                stride_ * sizeof(float));
    if (redo) MarkDirty(sh, slot, lsn);
    if (store_ == nullptr) sh.changed[slot] = 1;
  }
  for (const Group* g : w.live) {
    Shard& sh = shards_[g->shard];
    ++sh.version;
    if (b.sequence != 0) sh.last_sequence[b.writer_id] = b.sequence;
    if (redo) {
      sh.applied_lsn = lsn;
      // Sequences change the cut even where no row changed.
      if (sh.first_dirty_lsn == 0) sh.first_dirty_lsn = lsn;
    }
  }
}

absl::Status ShardedTable::Backpressure(const PushWork& w) {
  bool wake = false;
  for (const Group* g : w.live) {
    Shard& sh = shards_[g->shard];
    uint32_t unclean, slots;
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      unclean = sh.unclean;
      slots = sh.slot_key.size();
    }
    if (unclean >= max_slots_ || slots > max_slots_) {
      if (absl::Status st = FlushShard(g->shard); !st.ok()) return st;
      std::lock_guard<std::mutex> lock(sh.mu);
      TrimToBudget(sh);
    } else if (unclean >= max_slots_ / 2) {
      wake = true;
    }
  }
  if (wake) {
    std::lock_guard<std::mutex> lock(flusher_mu_);
    flush_wanted_ = true;
    flusher_cv_.notify_one();
  }
  return absl::OkStatus();
}

}  // namespace sampan

namespace sampan {

// Drops the clean rows in slots past the budget (RocksDB has them), from
// the end, so a push larger than the hot tier leaves it within budget.
void ShardedTable::TrimToBudget(Shard& sh) {
  uint32_t keep = sh.slot_key.size();
  while (keep > max_slots_ && sh.state[keep - 1] == kClean) {
    --keep;
    const uint64_t key = sh.slot_key[keep];
    if (sh.index.Find(key) == keep) {
      sh.index.Erase(key);
      ++sh.evict_epoch;
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (keep == sh.slot_key.size()) return;
  sh.slot_key.Truncate(keep);
  sh.rows.Truncate(keep);
  sh.referenced.resize(keep);
  sh.state.resize(keep);
  sh.free_slots.erase(std::remove_if(sh.free_slots.begin(), sh.free_slots.end(),
                                     [keep](uint32_t s) { return s >= keep; }),
                      sh.free_slots.end());
  if (sh.hand >= keep) sh.hand = 0;
}

}  // namespace sampan
