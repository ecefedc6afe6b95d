// ShardedTable's redo log mode: dirty rows, the flusher, log truncation and
// recovery (the design is in sharded_table.h).

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/thread_priority.h"
#include "sparse_table/sharded_table.h"

namespace sampan {

void ShardedTable::MarkDirty(Shard& sh, uint32_t slot, uint64_t lsn) {
  if (sh.state[slot] != kDirty) {
    if (sh.state[slot] == kClean) ++sh.unclean;
    sh.state[slot] = kDirty;
    sh.dirty_slots.push_back(slot);
  }
  if (sh.first_dirty_lsn == 0) sh.first_dirty_lsn = lsn;
}

bool ShardedTable::TakeDirty(Shard& sh, std::vector<uint32_t>* slots) {
  for (uint32_t slot : sh.dirty_slots) {
    if (sh.state[slot] != kDirty) continue;  // listed twice
    sh.state[slot] = kFlushing;
    slots->push_back(slot);
  }
  sh.dirty_slots.clear();
  const bool cut = sh.first_dirty_lsn != 0;
  sh.flushing_from = sh.first_dirty_lsn;
  sh.first_dirty_lsn = 0;
  return cut;
}

void ShardedTable::BeginFlush(Shard& sh, uint32_t s, rocksdb::WriteBatch* wb,
                              std::vector<uint32_t>* slots) {
  const bool cut = TakeDirty(sh, slots);
  // Keys in order: RocksDB's memtable inserts sorted keys far faster (its
  // skiplist reuses the previous insert's position).
  std::sort(slots->begin(), slots->end(), [&sh](uint32_t a, uint32_t b) {
    return sh.slot_key[a] < sh.slot_key[b];
  });
  for (uint32_t slot : *slots) {
    const float* row = sh.rows[slot];
    store_->PutRow(wb, sh.slot_key[slot], row, acc_.stored_floats(row));
  }
  if (cut) {
    // The rows above plus the clean ones already stored are the shard after
    // every record up to applied_lsn: write that cut with them.
    store_->PutShardLsn(wb, s, sh.applied_lsn);
    for (const auto& [writer, seq] : sh.last_sequence) {
      store_->PutSequence(wb, s, writer, seq);
    }
  }
}

void ShardedTable::BeginSstFlush(Shard& sh, uint32_t s,
                                 RowStore::SstRound* round,
                                 std::vector<uint32_t>* slots,
                                 std::vector<float>* copy) {
  if (TakeDirty(sh, slots)) {
    round->lsns.emplace_back(s, sh.applied_lsn);
    for (const auto& [writer, seq] : sh.last_sequence) {
      round->sequences.push_back({s, writer, seq});
    }
  }
  if (copy != nullptr) {
    size_t total = 0;
    for (uint32_t slot : *slots) total += acc_.stored_floats(sh.rows[slot]);
    copy->resize(total);  // sized once: the pointers below stay valid
  }
  size_t at = 0;
  for (uint32_t slot : *slots) {
    const float* row = sh.rows[slot];
    const uint32_t n = acc_.stored_floats(row);
    if (copy != nullptr) {
      std::copy(row, row + n, copy->data() + at);
      row = copy->data() + at;
      at += n;
    }
    round->rows.push_back({sh.slot_key[slot], row, n});
  }
}

// Copies out under each shard's lock in turn, then writes and ingests the
// file with no shard lock held, so pulls and pushes go on meanwhile; rows
// being written stay unevictable until RocksDB has them.
absl::Status ShardedTable::FlushRound(const std::vector<uint32_t>& shards,
                                      bool locked) {
  RowStore::SstRound round;
  std::vector<std::vector<uint32_t>> slots(shards.size());
  std::vector<std::vector<float>> copies(locked ? 0 : shards.size());
  for (size_t i = 0; i < shards.size(); ++i) {
    Shard& sh = shards_[shards[i]];
    std::unique_lock<std::mutex> lock(sh.mu, std::defer_lock);
    if (!locked) lock.lock();
    BeginSstFlush(sh, shards[i], &round, &slots[i],
                  locked ? nullptr : &copies[i]);
  }
  absl::Status st = LogDurableThroughCuts();
  if (st.ok()) st = store_->IngestRound(&round);
  for (size_t i = 0; i < shards.size(); ++i) {
    Shard& sh = shards_[shards[i]];
    std::unique_lock<std::mutex> lock(sh.mu, std::defer_lock);
    if (!locked) lock.lock();
    EndFlush(sh, slots[i], st.ok());
  }
  return st;
}

void ShardedTable::EndFlush(Shard& sh, const std::vector<uint32_t>& slots,
                            bool ok) {
  for (uint32_t slot : slots) {
    if (sh.state[slot] != kFlushing) continue;  // dirtied again meanwhile
    if (ok) {
      sh.state[slot] = kClean;
      --sh.unclean;
    } else {
      sh.state[slot] = kDirty;
      sh.dirty_slots.push_back(slot);
    }
  }
  // On failure the rows are dirty since the flush's first LSN again (it is
  // below any LSN a push set meanwhile).
  if (!ok && sh.flushing_from != 0) sh.first_dirty_lsn = sh.flushing_from;
  if (ok) flushed_rows_.fetch_add(slots.size(), std::memory_order_relaxed);
  sh.flushing_from = 0;
}

// Writes outside the shard lock, so pulls of the shard go on meanwhile;
// rows being written stay unevictable until RocksDB has them.
absl::Status ShardedTable::FlushShard(uint32_t s) {
  Shard& sh = shards_[s];
  std::lock_guard<std::mutex> flushing(sh.flush_mu);
  if (o_.write_back == WriteBack::kSstFile) return FlushRound({s}, false);
  rocksdb::WriteBatch wb;
  std::vector<uint32_t> slots;
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    BeginFlush(sh, s, &wb, &slots);
  }
  absl::Status st = LogDurableThroughCuts();
  if (st.ok() && wb.Count() > 0) st = store_->WriteUnlogged(&wb);
  std::lock_guard<std::mutex> lock(sh.mu);
  EndFlush(sh, slots, st.ok());
  return st;
}

// A cut written to RocksDB says "every record up to L is applied here", so
// the log must hold those records first: otherwise a crash after the write
// and before the group-commit leader wrote record L leaves a push that was
// never acknowledged applied on the shards just flushed and absent from the
// rest, with no record to replay there (seen in crash_test once). Called
// after the cuts are taken, so the last LSN covers them (a record is
// appended before its rows are installed).
absl::Status ShardedTable::LogDurableThroughCuts() {
  if (log_ == nullptr) return absl::OkStatus();
  return log_->WaitDurable(log_->last_lsn());
}

std::vector<uint32_t> ShardedTable::AllShards() const {
  std::vector<uint32_t> all(shards_.size());
  for (uint32_t s = 0; s < all.size(); ++s) all[s] = s;
  return all;
}

std::vector<std::vector<uint32_t>> ShardedTable::SstRounds() {
  const uint64_t row_bytes = uint64_t{stride_} * sizeof(float);
  std::vector<std::vector<uint32_t>> rounds(1);
  uint64_t bytes = 0;
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    uint64_t shard_bytes;
    {
      std::lock_guard<std::mutex> lock(shards_[s].mu);
      shard_bytes = shards_[s].unclean * row_bytes;
    }
    if (bytes > 0 && bytes + shard_bytes > round_copy_bytes_) {
      rounds.emplace_back();
      bytes = 0;
    }
    rounds.back().push_back(s);
    bytes += shard_bytes;
  }
  return rounds;
}

absl::Status ShardedTable::FlushAllShards() {
  if (o_.write_back == WriteBack::kSstFile) {
    // As few files as the copy's budget allows: a file per shard per round
    // would flood L0, one file of every dirty row would copy up to the
    // whole hot tier (measured: the fill of a table 4x its budget peaked
    // there).
    for (Shard& sh : shards_) sh.flush_mu.lock();
    absl::Status st;
    for (const std::vector<uint32_t>& round : SstRounds()) {
      st = FlushRound(round, false);
      if (!st.ok()) break;
    }
    for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) {
      it->flush_mu.unlock();
    }
    return st;
  }
  absl::Status first;
  for (uint32_t s = 0; s < shards_.size(); ++s) first.Update(FlushShard(s));
  return first;
}

uint64_t ShardedTable::UnflushedFrom() {
  // Read first: every record up to it has been installed, so a shard it
  // left unflushed shows it below.
  uint64_t bound = log_->last_lsn() + 1;
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    for (uint64_t lsn : {sh.first_dirty_lsn, sh.flushing_from}) {
      if (lsn != 0) bound = std::min(bound, lsn);
    }
  }
  return bound;
}

absl::Status ShardedTable::TruncateLog() {
  const uint64_t bound = UnflushedFrom();
  // Rows written to the memtable without RocksDB's WAL are kept only by
  // its files (ingested files are durable already).
  if (o_.write_back == WriteBack::kMemtable) {
    if (absl::Status st = store_->FlushMemtable(); !st.ok()) return st;
  }
  return log_->DeleteBelow(bound);
}

absl::Status ShardedTable::PersistAndLockAll() {
  for (Shard& sh : shards_) sh.flush_mu.lock();
  LockAll();
  if (log_ == nullptr) return absl::OkStatus();
  // Every lock is held, so no record is appended from here on: once the log
  // holds the last one, it holds every cut written below.
  absl::Status st = LogDurableThroughCuts();
  if (st.ok() && o_.write_back == WriteBack::kSstFile) {
    // The file is written straight from the arena.
    st = FlushRound(AllShards(), true);
  }
  // Memtable: one batch per shard (its cut is per shard): a batch of the
  // whole hot tier would double the memory it takes.
  for (uint32_t s = 0;
       s < shards_.size() && st.ok() && o_.write_back == WriteBack::kMemtable;
       ++s) {
    rocksdb::WriteBatch wb;
    std::vector<uint32_t> slots;
    BeginFlush(shards_[s], s, &wb, &slots);
    if (wb.Count() > 0) st = store_->WriteUnlogged(&wb);
    EndFlush(shards_[s], slots, st.ok());
  }
  if (st.ok()) st = store_->FlushMemtable();
  if (st.ok()) st = log_->DeleteBelow(log_->last_lsn() + 1);
  return st;
}

void ShardedTable::ReleaseAll() {
  UnlockAll();
  for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) {
    it->flush_mu.unlock();
  }
}

absl::Status ShardedTable::Flush() {
  if (store_ == nullptr) return absl::OkStatus();
  if (log_ == nullptr) return store_->SyncWal();
  absl::Status st = log_->Sync();
  if (st.ok()) st = PersistAndLockAll();
  ReleaseAll();
  return st;
}

void ShardedTable::FlusherLoop() {
  constexpr auto kTrimInterval = std::chrono::seconds(5);
  auto last_trim = std::chrono::steady_clock::now() - kTrimInterval;
  // Write-back can wait, pulls cannot: when the cores are busy, a waking
  // pull preempts this thread. Backpressure keeps it from falling behind
  // for good: a shard whose dirty rows fill its budget is flushed by the
  // pusher itself, at normal priority.
  SetCurrentThreadNice(kBackgroundNice);
  SetCurrentThreadName("table-flusher");
  std::unique_lock<std::mutex> lock(flusher_mu_);
  while (!stop_) {
    flusher_cv_.wait_for(lock, std::chrono::milliseconds(o_.flush_interval_ms),
                         [this] { return stop_ || flush_wanted_; });
    if (stop_) break;
    flush_wanted_ = false;
    lock.unlock();
    absl::Status st = FlushAllShards();
    if (st.ok() && log_->disk_bytes() > o_.redo_log_bytes) st = TruncateLog();
    // The round's copies, RocksDB's file builders and evicted rows leave
    // free pages inside malloc's arenas, which glibc keeps resident; the
    // table's memory budget holds only if they go back to the kernel. Not
    // after every round: a trim walks every arena under its lock (6 ms
    // median, 65 ms at worst with a 1 GiB hot tier, measured), stalling
    // the pulls that allocate meanwhile.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_trim >= kTrimInterval) {
      malloc_trim(0);
      last_trim = now;
    }
    if (!st.ok()) {
      SAMPAN_LOG(ERROR) << "table " << o_.table_name
                        << ": background flush: " << st.message();
    }
    lock.lock();
  }
}

void ShardedTable::StopFlusher() {
  {
    std::lock_guard<std::mutex> lock(flusher_mu_);
    stop_ = true;
    flusher_cv_.notify_all();
  }
  if (flusher_.joinable()) flusher_.join();
}

std::string ShardedTable::RedoLogDir() const {
  return absl::StrCat(o_.data_dir, "/redo-", o_.table_name);
}

absl::Status ShardedTable::CloseRedoLog() {
  StopFlusher();
  absl::Status st = PersistAndLockAll();
  ReleaseAll();
  if (!st.ok()) return st;
  log_.reset();
  std::error_code ec;
  std::filesystem::remove_all(RedoLogDir(), ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("remove ", RedoLogDir(), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status ShardedTable::OpenRedoLog() {
  uint64_t min_lsn = 0;
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    min_lsn = std::max(min_lsn, sh.applied_lsn);
  }
  RedoLog::Options lo;
  lo.dir = RedoLogDir();
  lo.sync = o_.durability == Durability::kSync;
  uint64_t replayed = 0;
  auto log =
      RedoLog::Open(lo, min_lsn, [&](uint64_t lsn, absl::string_view body) {
        absl::StatusOr<LoggedPush> p = DecodePush(body);
        if (!p.ok()) {
          return absl::DataLossError(absl::StrCat(
              "redo log ", lo.dir, ", LSN ", lsn, ": ", p.status().message()));
        }
        if (p->floats_per_key != pull_dim()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "redo log ", lo.dir, ", LSN ", lsn, ": ", p->floats_per_key,
              " floats per key, the table pulls ", pull_dim(),
              " (embedding_dim changed?)"));
        }
        ++replayed;
        return ReplayPush(lsn, p->batch());
      });
  if (!log.ok()) return log.status();
  log_ = *std::move(log);
  if (replayed > 0) {
    SAMPAN_LOG(INFO) << "redo log " << lo.dir << ": replayed " << replayed
                     << " pushes";
  }
  absl::Status st = PersistAndLockAll();
  ReleaseAll();
  if (!st.ok()) return st;
  flusher_ = std::thread([this] { FlusherLoop(); });
  return absl::OkStatus();
}

}  // namespace sampan
