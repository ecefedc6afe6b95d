// A counter workload for fault tests: pushes a gradient of -1 (on w; 0 on
// the embedding) to each of --keys keys, --rounds times, through the real
// PsClient (merging queue, retries, exactly-once sequences), then checks
// that every key was updated exactly as often as the pushes acknowledged.
//
// Two ways to read a counter:
//   - default: an LR table with SGD and learning rate 1, where w is the
//     number of pushes applied (pushes may merge in the client's queue);
//   - --config=JOB.yaml: any table of that job (a training job's own table,
//     Adagrad, FM rows...). Each round is flushed on its own, so the
//     pserver applies every round as one update; the count of a key is the
//     k for which a reference in-memory table with the same options, pushed
//     k times, holds bitwise the same w (the optimizer is deterministic).
//     With --verify the tool only reads and checks (--acked=N, --in_doubt=0
//     or 1: a last round whose ack was lost may or may not count), e.g.
//     after the job ended, against its pservers reopened on their RocksDB.
//     --out=FILE records "acked N in_doubt K" after every round.
//     --table_id=1 counts in an ASYNC deep job's dense table instead
//     (sparse_table/job_options.h), its optimizer and row width.
//
// --pservers=A,B,... names the pservers; or --coordinator=HOST:PORT takes
// them from the job's coordinator and follows its shard map, as a trainer
// does (a pserver that comes back at another port).
//
// Exit status: 0 exact, 1 a push failed (printed), 3 counters wrong.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/flags.h"
#include "common/hash.h"
#include "common/shard_map.h"
#include "coordinator/client.h"
#include "sparse_table/job_options.h"
#include "sparse_table/sparse_table.h"
#include "trainer/client/ps_client.h"

namespace {

using namespace sampan;

int64_t Int(const Flags& f, const char* name, int64_t def) {
  return *f.GetInt(name, def);
}

struct Workload {
  std::vector<uint64_t> keys;
  std::vector<float> grads, ones, zeros;
  uint32_t row_dim = 1;
};

void RecordAcked(const std::string& path, int acked, int in_doubt) {
  if (path.empty()) return;
  std::ofstream(path + ".tmp")
      << "acked " << acked << " in_doubt " << in_doubt << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());
}

// Pushes the rounds; returns the exit status.
int Push(PsClient* client, const Workload& w, int rounds, bool flush_each,
         absl::Duration pause, const std::string& out) {
  const absl::Time start = absl::Now();
  int acked = 0;
  for (int r = 0; r < rounds; ++r) {
    absl::Status s = client->PushAsync(w.keys, w.grads, w.ones, w.zeros);
    if (s.ok() && flush_each) s = client->Flush();
    if (!s.ok()) {
      RecordAcked(out, acked, 1);
      std::printf("push failed after %.2fs, %d rounds acknowledged: %s\n",
                  absl::ToDoubleSeconds(absl::Now() - start), acked,
                  std::string(s.message()).c_str());
      return 1;
    }
    if (flush_each) RecordAcked(out, ++acked, 0);
    absl::SleepFor(pause);
  }
  if (absl::Status s = client->Flush(); !s.ok()) {
    std::printf("flush failed after %.2fs: %s\n",
                absl::ToDoubleSeconds(absl::Now() - start),
                std::string(s.message()).c_str());
    return 1;
  }
  RecordAcked(out, rounds, 0);
  const PsClientStats stats = client->Stats();
  std::printf(
      "pushed %zu keys x %d rounds in %.2fs; %llu push requests, %llu push "
      "retries\n",
      w.keys.size(), rounds, absl::ToDoubleSeconds(absl::Now() - start),
      static_cast<unsigned long long>(stats.pushes_sent),
      static_cast<unsigned long long>(stats.push_retries));
  return 0;
}

// The options of the job's table `table_id` (pserver 0's; they differ only
// in data_dir).
TableOptions OptionsOf(const JobConfig& job, uint32_t table_id) {
  return table_id == kDenseTableId ? DenseTableOptionsFromJob(job, 0)
                                   : TableOptionsFromJob(job, 0);
}

// The w a key holds after k applied rounds, k = 0..max_k, per key.
std::vector<std::vector<float>> Reference(const JobConfig& job,
                                          uint32_t table_id, const Workload& w,
                                          int max_k) {
  TableOptions o = OptionsOf(job, table_id);
  o.backend = Backend::kMemory;
  std::unique_ptr<SparseTable> table = NewMemoryTable(o);
  std::vector<std::vector<float>> ref(max_k + 1);
  std::vector<float> rows(w.keys.size() * w.row_dim);
  for (int k = 0; k <= max_k; ++k) {
    if (k > 0) {
      PushBatch b;
      b.keys = w.keys;
      b.grads = w.grads.data();
      b.shows = w.ones.data();
      b.clicks = w.zeros.data();
      (void)table->Push(b);
    }
    (void)table->Pull(w.keys, false, rows.data());
    for (size_t i = 0; i < w.keys.size(); ++i) {
      ref[k].push_back(rows[i * w.row_dim]);
    }
  }
  return ref;
}

// Counts per key: the k whose reference w matches bitwise, -1 for none.
int Verify(PsClient* client, const Workload& w, const JobConfig* job,
           uint32_t table_id, int acked, int in_doubt) {
  std::vector<float> rows(w.keys.size() * w.row_dim);
  absl::Status s = client->Pull(w.keys, false, rows.data());
  if (!s.ok()) {
    std::printf("pull failed: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const int max_k = acked + in_doubt + 2;
  std::vector<std::vector<float>> ref;
  if (job != nullptr) ref = Reference(*job, table_id, w, max_k);
  int lost = 0, doubled = 0, unknown = 0, in_doubt_applied = 0;
  for (size_t i = 0; i < w.keys.size(); ++i) {
    const float got = rows[i * w.row_dim];
    int k = -1;
    if (job == nullptr) {
      k = static_cast<int>(got);
    } else {
      for (int c = 0; c <= max_k && k < 0; ++c) {
        if (std::memcmp(&ref[c][i], &got, sizeof got) == 0) k = c;
      }
    }
    if (k < 0)
      ++unknown;
    else if (k < acked)
      ++lost;
    else if (k > acked + in_doubt)
      ++doubled;
    else if (k > acked)
      ++in_doubt_applied;
  }
  std::printf(
      "%zu keys, %d acknowledged rounds (+%d in doubt): %d lost, %d doubled, "
      "%d unmatched; the round in doubt applied on %d keys\n",
      w.keys.size(), acked, in_doubt, lost, doubled, unknown, in_doubt_applied);
  return lost == 0 && doubled == 0 && unknown == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = Flags::Parse(
      argc, argv, 1,
      {"pservers", "coordinator", "num_shards", "keys", "rounds", "deadline_ms",
       "retry_ms", "writer", "key_slot", "pause_ms", "config", "verify",
       "acked", "in_doubt", "out", "table_id"});
  if (!flags.ok()) {
    std::printf("%s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->Has("table_id") && !flags->Has("config")) {
    std::printf("--table_id needs --config (the job that has the table)\n");
    return 2;
  }
  std::unique_ptr<JobConfig> job;
  PsClientOptions o;
  uint32_t num_shards = Int(*flags, "num_shards", 16);
  Workload w;
  if (flags->Has("config")) {
    absl::StatusOr<JobConfig> loaded = LoadJobConfig(flags->Get("config"));
    if (!loaded.ok()) {
      std::printf("%s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    job = std::make_unique<JobConfig>(*loaded);
    num_shards = job->table().num_shards();
    o.table_id = Int(*flags, "table_id", 0);
    if (o.table_id == kDenseTableId && !HasDenseTable(*job)) {
      std::printf("--table_id=1: %s has no dense table (ASYNC deep models)\n",
                  flags->Get("config").c_str());
      return 2;
    }
    w.row_dim = NewMemoryTable(OptionsOf(*job, o.table_id))->pull_dim();
  }
  std::unique_ptr<CoordinatorClient> coordinator;
  if (flags->Has("coordinator")) {
    coordinator = std::make_unique<CoordinatorClient>(
        flags->Get("coordinator"), absl::Seconds(2), absl::Seconds(30));
    absl::StatusOr<coord::ClusterSpec> spec = coordinator->WaitClusterSpec();
    if (!spec.ok()) {
      std::printf("%s\n", std::string(spec.status().message()).c_str());
      return 1;
    }
    o.shard_map = CoordinatorClient::ToShardMap(spec->shard_map());
    o.fetch_shard_map = [&coordinator] { return coordinator->GetShardMap(); };
  } else {
    o.shard_map = InitialShardMap(num_shards,
                                  absl::StrSplit(flags->Get("pservers"), ','));
  }
  o.row_dim = w.row_dim;
  o.deadline = absl::Milliseconds(Int(*flags, "deadline_ms", 2000));
  o.retry_timeout = absl::Milliseconds(Int(*flags, "retry_ms", 30000));
  o.max_keys_per_request = 512;
  // Each run is a new writer, as each trainer incarnation is: reusing an id
  // would make its sequences 1, 2, ... look like replays of an earlier run.
  o.writer_id = Int(*flags, "writer", std::random_device{}());
  const int keys_n = Int(*flags, "keys", 1000);
  const int rounds = Int(*flags, "rounds", 100);
  const int slot = Int(*flags, "key_slot", 1);
  for (int i = 0; i < keys_n; ++i) {
    w.keys.push_back(FeatureSign(slot, std::to_string(i)));
  }
  w.grads.assign(keys_n * w.row_dim, 0.0f);
  for (int i = 0; i < keys_n; ++i) w.grads[i * w.row_dim] = -1.0f;
  w.ones.assign(keys_n, 1.0f);
  w.zeros.assign(keys_n, 0.0f);
  auto client = PsClient::Create(o);
  if (Int(*flags, "verify", 0) != 0) {
    return Verify(client.get(), w, job.get(), o.table_id,
                  Int(*flags, "acked", rounds), Int(*flags, "in_doubt", 0));
  }
  const int pushed =
      Push(client.get(), w, rounds, job != nullptr,
           absl::Milliseconds(Int(*flags, "pause_ms", 0)), flags->Get("out"));
  if (pushed != 0) return pushed;
  return Verify(client.get(), w, job.get(), o.table_id, rounds, 0);
}
