// The hot tier across restarts (sharded_table.h, RocksDB backend): the keys
// of the hot rows are saved beside the database when the table closes and
// after every full snapshot, and a reopened table reads their rows back in
// the background (kWarmReaders threads through its own pull path), in
// row-key order (shard, then key: near-sequential reads of the files), until
// the list ends or the hot tier is full. Without
// it a restarted pserver's every key is a cold read until the tier warms by
// misses, at random-read speed.
//
// File <data_dir>/<table_name>.hotkeys (little-endian):
//   "SMPHOTK1" | u64 n | n x u64 key | u32 masked CRC-32C of all before
// A missing, short or corrupt file warms nothing (logged); it is a hint,
// never state: the rows come from RocksDB as any pull's do.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file_digest.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/thread_priority.h"
#include "sparse_table/crc32c.h"
#include "sparse_table/sharded_table.h"

namespace sampan {
namespace {

constexpr char kMagic[] = "SMPHOTK1";
constexpr size_t kWarmBatch = 1024;
constexpr int kWarmReaders = 4;

absl::StatusOr<std::vector<uint64_t>> ReadHotKeys(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string data = buf.str();
  uint64_t n = 0;
  if (data.size() >= 16) std::memcpy(&n, data.data() + 8, 8);
  if (data.size() < 20 || data.compare(0, 8, kMagic) != 0 ||
      n != (data.size() - 20) / 8 || (data.size() - 20) % 8 != 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a hot key list (", data.size(), " bytes)"));
  }
  uint32_t stored;
  std::memcpy(&stored, data.data() + data.size() - 4, 4);
  if (crc32c::Unmask(stored) != crc32c::Value(data.data(), data.size() - 4)) {
    return absl::DataLossError(absl::StrCat(path, ": checksum mismatch"));
  }
  std::vector<uint64_t> keys(n);
  std::memcpy(keys.data(), data.data() + 16, n * 8);
  return keys;
}

}  // namespace

std::string ShardedTable::HotKeysFile() const {
  return absl::StrCat(o_.data_dir, "/", o_.table_name, ".hotkeys");
}

absl::Status ShardedTable::SaveHotKeys() {
  if (store_ == nullptr || warming_.load()) return absl::OkStatus();
  std::string data(kMagic, 8);
  data.append(8, '\0');
  uint64_t n = 0;
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    for (uint32_t slot = 0; slot < sh.slot_key.size(); ++slot) {
      const uint64_t key = sh.slot_key[slot];
      if (sh.index.Find(key) != slot) continue;  // a freed slot
      data.append(reinterpret_cast<const char*>(&key), 8);
      ++n;
    }
  }
  std::memcpy(data.data() + 8, &n, 8);
  const uint32_t crc = crc32c::Mask(crc32c::Value(data.data(), data.size()));
  data.append(reinterpret_cast<const char*>(&crc), 4);
  return WriteFileDurably(HotKeysFile(), data);
}

void ShardedTable::StartWarmUp() {
  std::error_code ec;
  if (store_ == nullptr || !std::filesystem::exists(HotKeysFile(), ec)) return;
  warming_.store(true);
  warm_up_ = std::thread([this] { WarmUp(); });
}

void ShardedTable::StopWarmUp() {
  stop_warm_up_.store(true);
  if (warm_up_.joinable()) warm_up_.join();
}

void ShardedTable::WarmUp() {
  SetCurrentThreadName("warm-up");
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<uint64_t>> keys = ReadHotKeys(HotKeysFile());
  if (!keys.ok()) {
    SAMPAN_LOG(WARNING) << "table " << o_.table_name
                        << ": no warm-up: " << keys.status().message();
    warming_.store(false);  // nothing to keep: the next save replaces it
    return;
  }
  std::vector<std::pair<uint32_t, uint64_t>> order;
  order.reserve(keys->size());
  for (uint64_t key : *keys)
    order.emplace_back(ShardOf(key, o_.num_shards), key);
  std::sort(order.begin(), order.end());
  // Readers take whole shards in turn: several reads in flight, where one
  // thread's reads would wait on the disk one at a time.
  std::vector<size_t> shard_start;  // where each shard's keys begin
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || order[i].first != order[i - 1].first)
      shard_start.push_back(i);
  }
  shard_start.push_back(order.size());
  std::atomic<size_t> next_shard{0};
  std::atomic<uint64_t> read{0};
  std::atomic<bool> failed{false};
  auto reader = [&] {
    // Training's own pulls first: the warm-up only saves them misses.
    SetCurrentThreadNice(kBackgroundNice);
    std::vector<uint64_t> batch;
    std::vector<float> out(kWarmBatch * pull_dim());
    for (size_t n; (n = next_shard.fetch_add(1)) + 1 < shard_start.size();) {
      const uint32_t s = order[shard_start[n]].first;
      for (size_t i = shard_start[n]; i < shard_start[n + 1];) {
        if (stop_warm_up_.load() || failed.load()) return;
        {
          // Only while the shard's part of the tier has room.
          std::lock_guard<std::mutex> lock(shards_[s].mu);
          if (shards_[s].index.size() >= max_slots_) break;
        }
        batch.clear();
        for (; i < shard_start[n + 1] && batch.size() < kWarmBatch; ++i) {
          batch.push_back(order[i].second);
        }
        if (absl::Status st = Pull(batch, /*is_training=*/false, out.data());
            !st.ok()) {
          SAMPAN_LOG(WARNING) << "table " << o_.table_name
                              << ": warm-up stopped: " << st.message();
          failed.store(true);
          return;
        }
        read += batch.size();
      }
    }
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < kWarmReaders; ++r) readers.emplace_back(reader);
  for (std::thread& t : readers) t.join();
  if (failed.load()) {
    warming_.store(false);
    return;
  }
  const bool stopped = stop_warm_up_.load();
  SAMPAN_LOG(INFO) << "table " << o_.table_name << ": warmed the hot tier with "
                   << read.load() << " of " << order.size() << " saved keys in "
                   << absl::Now() - start
                   << (stopped ? " (stopped: table closing)" : "");
  if (!stopped) warming_.store(false);
}

}  // namespace sampan
