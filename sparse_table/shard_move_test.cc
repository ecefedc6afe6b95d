// Shard moves (SparseTable::ExportShard / ImportShard / DropShard) in every
// table mode: the memory backend, RocksDB with its WAL, and RocksDB with the
// redo log writing back as SST files or through the memtable (rows pushed
// stay dirty in the hot tier: the flusher never runs by itself here).
// shard_move_crash_test covers what a SIGKILL after an import or a drop
// leaves.
#include <filesystem>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "sparse_table/shard_move_testlib.h"

namespace sampan {
namespace {

constexpr uint32_t kShard = 2;

class ShardMoveTest : public ::testing::TestWithParam<MoveMode> {
 protected:
  std::string Dir(const std::string& name) {
    return absl::StrCat(testing::TempDir(), "/", GetParam().name, "_", name,
                        "_", testing::UnitTest::GetInstance()->random_seed());
  }
  std::unique_ptr<SparseTable> Open(const std::string& name,
                                    bool fresh = true) {
    if (fresh) std::filesystem::remove_all(Dir(name));
    auto table = NewTable(MoveTableOptions(GetParam(), Dir(name)));
    EXPECT_TRUE(table.ok()) << table.status();
    return table.ok() ? std::move(*table) : nullptr;
  }
  bool rocksdb() const { return GetParam().backend == Backend::kRocksDb; }
  bool redo() const {
    return rocksdb() && GetParam().log == DurabilityLog::kRedoLog;
  }

  static std::vector<uint64_t> KeysOf(const std::vector<uint64_t>& keys,
                                      uint32_t shard, bool in = true) {
    std::vector<uint64_t> out;
    for (uint64_t k : keys) {
      if ((ShardOf(k, kMoveShards) == shard) == in) out.push_back(k);
    }
    return out;
  }
  static std::vector<float> Pull(SparseTable& t,
                                 const std::vector<uint64_t>& keys) {
    std::vector<float> out(keys.size() * t.pull_dim());
    EXPECT_TRUE(t.Pull(keys, false, out.data()).ok());
    return out;
  }
  static ShardContent Content(SparseTable& t, uint32_t shard) {
    absl::StatusOr<ShardContent> c = ExportAll(t, shard);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : ShardContent();
  }
};

TEST_P(ShardMoveTest, RoundTripCarriesRowsStateAndSequences) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  const std::vector<uint64_t> mine = KeysOf(keys, kShard);
  ASSERT_GT(mine.size(), 20u);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 3, keys).ok());
  ASSERT_TRUE(PushRounds(*a, 12, 5, 1, keys).ok());
  if (redo()) {
    // The rows are only in the hot tier and the log: the export must
    // write them back first.
    ASSERT_GT(a->Stats().dirty_rows, 0u);
  }
  auto b = Open("b");
  ASSERT_TRUE(MoveShard(*a, *b, kShard).ok());

  const ShardContent from = Content(*a, kShard), to = Content(*b, kShard);
  EXPECT_EQ(from.rows.size(), mine.size());
  EXPECT_EQ(to.rows, from.rows);  // every stored float, state included
  EXPECT_EQ(to.sequences, (std::map<uint64_t, uint64_t>{{11, 3}, {12, 5}}));
  EXPECT_GT(from.chunks, from.rows.size() / 7);  // bounded chunks
  // Both row layouts travelled: short rows (no embedding yet) and full ones.
  std::set<size_t> widths;
  for (const auto& [key, row] : to.rows) widths.insert(row.size());
  EXPECT_EQ(widths.size(), 2u);
  EXPECT_EQ(Pull(*b, mine), Pull(*a, mine));
  // Only the shard moved.
  const std::vector<uint64_t> others = KeysOf(keys, kShard, false);
  EXPECT_EQ(Pull(*b, others),
            std::vector<float>(others.size() * (1 + kMoveDim)));

  // A push the source had applied is a duplicate on the target.
  absl::StatusOr<PushResult> replay = PushRounds(*b, 11, 3, 1, mine);
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_EQ(replay->applied_keys, 0u);
  EXPECT_EQ(replay->duplicate_keys, mine.size());
  EXPECT_EQ(Content(*b, kShard).rows, from.rows);
  // The next sequence applies, as it would have on the source.
  absl::StatusOr<PushResult> next = PushRounds(*b, 11, 4, 1, mine);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->applied_keys, mine.size());
  ASSERT_TRUE(PushRounds(*a, 11, 4, 1, mine).ok());
  EXPECT_EQ(Pull(*b, mine), Pull(*a, mine));
  EXPECT_EQ(Content(*b, kShard).rows, Content(*a, kShard).rows);
}

// A training pull during the import creates rows of initial value (in the
// RocksDB hot tier, not stored); the imported rows must win over them.
TEST_P(ShardMoveTest, RowsPulledDuringTheImportDoNotOutliveIt) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  const std::vector<uint64_t> mine = KeysOf(keys, kShard);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 2, keys).ok());
  auto b = Open("b");
  absl::StatusOr<std::unique_ptr<ShardImport>> import = b->ImportShard(kShard);
  ASSERT_TRUE(import.ok());
  std::vector<float> pulled(mine.size() * b->pull_dim());
  ASSERT_TRUE(b->Pull(mine, /*is_training=*/true, pulled.data()).ok());
  ASSERT_TRUE(a->ExportShard(kShard, 7, [&](const ShardChunk& c) {
                 return (*import)->Add(c);
               }).ok());
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ(Pull(*b, mine), Pull(*a, mine));
}

TEST_P(ShardMoveTest, ImportReplacesStaleRowsAndSequences) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  const std::vector<uint64_t> fresh(keys.begin(), keys.begin() + 100);
  const std::vector<uint64_t> stale(keys.begin() + 100, keys.end());
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 2, fresh).ok());
  auto b = Open("b");
  ASSERT_TRUE(PushRounds(*b, 9, 50, 1, stale).ok());
  const std::vector<uint64_t> stale_other = KeysOf(stale, kShard, false);
  const std::vector<float> other_before = Pull(*b, stale_other);
  if (redo()) {
    ASSERT_GT(b->Stats().dirty_rows, 0u);
  }

  ASSERT_TRUE(MoveShard(*a, *b, kShard).ok());
  EXPECT_EQ(Content(*b, kShard).rows, Content(*a, kShard).rows);
  const std::vector<uint64_t> stale_mine = KeysOf(stale, kShard);
  ASSERT_FALSE(stale_mine.empty());
  EXPECT_EQ(Pull(*b, stale_mine),
            std::vector<float>(stale_mine.size() * (1 + kMoveDim)));
  EXPECT_EQ(Pull(*b, stale_other), other_before);  // other shards untouched
  // Writing back afterwards must not bring a stale row back.
  ASSERT_TRUE(b->Flush().ok());
  EXPECT_EQ(Content(*b, kShard).rows, Content(*a, kShard).rows);
  // Writer 9's sequence in the shard was replaced: its push 1 applies there.
  absl::StatusOr<PushResult> old_writer = PushRounds(*b, 9, 1, 1, stale_mine);
  ASSERT_TRUE(old_writer.ok());
  EXPECT_EQ(old_writer->applied_keys, stale_mine.size());
}

// A memory table keeps nothing across a reopen: RocksDB modes only.
class ShardMoveRocksDbTest : public ShardMoveTest {};

TEST_P(ShardMoveRocksDbTest, ImportSurvivesReopen) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 3, keys).ok());
  auto b = Open("b");
  ASSERT_TRUE(MoveShard(*a, *b, kShard).ok());
  b.reset();
  b = Open("b", /*fresh=*/false);
  const ShardContent from = Content(*a, kShard), to = Content(*b, kShard);
  EXPECT_EQ(to.rows, from.rows);
  EXPECT_EQ(to.sequences, from.sequences);
}

TEST_P(ShardMoveTest, DropDeletesTheShardOnly) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  const std::vector<uint64_t> mine = KeysOf(keys, kShard),
                              others = KeysOf(keys, kShard, false);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 2, keys).ok());
  const std::vector<float> others_before = Pull(*a, others);
  absl::StatusOr<uint64_t> dropped = a->DropShard(kShard);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(*dropped, mine.size());
  const auto check = [&](SparseTable& t) {
    const ShardContent c = Content(t, kShard);
    EXPECT_TRUE(c.rows.empty());
    EXPECT_TRUE(c.sequences.empty());
    EXPECT_EQ(Pull(t, mine), std::vector<float>(mine.size() * (1 + kMoveDim)));
    EXPECT_EQ(Pull(t, others), others_before);
  };
  check(*a);
  if (rocksdb()) {
    a.reset();
    a = Open("a", /*fresh=*/false);
    check(*a);
  }
  // The shard's sequences went with it.
  absl::StatusOr<PushResult> again = PushRounds(*a, 11, 1, 1, mine);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->applied_keys, mine.size());
}

TEST_P(ShardMoveTest, ShardWithoutRows) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 1, KeysOf(keys, kShard, false)).ok());
  auto b = Open("b");
  ASSERT_TRUE(PushRounds(*b, 9, 1, 1, keys).ok());
  const ShardContent empty = Content(*a, kShard);
  EXPECT_TRUE(empty.rows.empty());
  EXPECT_EQ(empty.chunks, 1u);  // the last chunk, rows or not
  ASSERT_TRUE(MoveShard(*a, *b, kShard).ok());
  EXPECT_TRUE(Content(*b, kShard).rows.empty());
  EXPECT_TRUE(Content(*b, kShard).sequences.empty());
  absl::StatusOr<uint64_t> dropped = a->DropShard(kShard);
  ASSERT_TRUE(dropped.ok());
  EXPECT_EQ(*dropped, 0u);
}

TEST_P(ShardMoveTest, AbandonedImportLeavesTheShardEmpty) {
  const std::vector<uint64_t> keys = MoveKeys(200);
  auto a = Open("a");
  ASSERT_TRUE(PushRounds(*a, 11, 1, 1, keys).ok());
  auto b = Open("b");
  ASSERT_TRUE(PushRounds(*b, 9, 1, 1, keys).ok());
  {
    absl::StatusOr<std::unique_ptr<ShardImport>> import =
        b->ImportShard(kShard);
    ASSERT_TRUE(import.ok());
    int chunks = 0;
    ASSERT_TRUE(a->ExportShard(kShard, 5, [&](const ShardChunk& c) {
                   return ++chunks == 1 ? (*import)->Add(c) : absl::OkStatus();
                 }).ok());
    EXPECT_EQ((*import)->rows(), 5u);
  }  // no Commit
  EXPECT_TRUE(Content(*b, kShard).rows.empty());
  EXPECT_TRUE(Content(*b, kShard).sequences.empty());
}

TEST_P(ShardMoveTest, BadInputIsRefusedWithAClearError) {
  auto a = Open("a");
  const auto sink = [](const ShardChunk&) { return absl::OkStatus(); };
  absl::Status st = a->ExportShard(kMoveShards, 10, sink);
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_TRUE(absl::StrContains(st.message(),
                                "ExportShard: shard 4 out of range (table "
                                "table0 has 4 shards)"))
      << st;
  EXPECT_TRUE(absl::IsInvalidArgument(a->ExportShard(0, 0, sink)));
  EXPECT_TRUE(absl::IsInvalidArgument(a->ImportShard(99).status()));
  st = a->DropShard(99).status();
  EXPECT_TRUE(absl::StrContains(st.message(), "DropShard: shard 99"));

  const uint64_t key = MoveKeys(200)[0];
  const uint32_t shard = ShardOf(key, kMoveShards);
  const auto refused = [&](ShardChunk chunk, const std::string& want) {
    absl::StatusOr<std::unique_ptr<ShardImport>> import = a->ImportShard(shard);
    ASSERT_TRUE(import.ok());
    const absl::Status added = (*import)->Add(chunk);
    EXPECT_TRUE(absl::IsInvalidArgument(added)) << added;
    EXPECT_TRUE(absl::StrContains(added.message(), want)) << added;
    EXPECT_TRUE(absl::IsFailedPrecondition((*import)->Commit()));
  };
  ShardChunk narrow;
  narrow.keys = {key};
  narrow.widths = {3};
  narrow.floats = {1, 2, 3};
  refused(narrow, absl::StrCat("row 0 (key ", key, ") has 3 floats"));
  ShardChunk foreign = narrow;
  foreign.keys = {key};
  for (uint64_t k = key + 1;; ++k) {
    if (ShardOf(k, kMoveShards) != shard) {
      foreign.keys = {k};
      break;
    }
  }
  refused(foreign, "is in shard");
  ShardChunk short_floats = narrow;
  short_floats.widths = {5};
  refused(short_floats, "needs 5 floats, the chunk has 3 left");
  ShardChunk no_widths = narrow;
  no_widths.widths.clear();
  refused(no_widths, "1 keys and 0 row widths");
  // Nothing of the refused chunks went in.
  EXPECT_TRUE(Content(*a, shard).rows.empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardMoveTest,
                         ::testing::ValuesIn(AllMoveModes()),
                         [](const ::testing::TestParamInfo<MoveMode>& info) {
                           return std::string(info.param.name);
                         });

INSTANTIATE_TEST_SUITE_P(Modes, ShardMoveRocksDbTest,
                         ::testing::Values(MoveModeNamed("RocksDbWal"),
                                           MoveModeNamed("RedoSst"),
                                           MoveModeNamed("RedoMemtable")),
                         [](const ::testing::TestParamInfo<MoveMode>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace sampan
