// A counter workload for fault tests: pushes a gradient of -1 to each of
// --keys keys, --rounds times, through the real PsClient (merging queue,
// retries, exactly-once sequences), then checks that every counter reads
// exactly --rounds. With an LR table, SGD and learning rate 1, a counter is
// the number of times its push was applied, so a lost push reads low and a
// doubled one reads high.
//
// Exit status: 0 exact, 1 a push failed (printed), 3 counters wrong.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "common/hash.h"
#include "trainer/client/ps_client.h"

namespace {

int64_t Int(const sampan::Flags& f, const char* name, int64_t def) {
  return *f.GetInt(name, def);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sampan;
  auto flags =
      Flags::Parse(argc, argv, 1,
                   {"pservers", "num_shards", "keys", "rounds", "deadline_ms",
                    "retry_ms", "writer", "key_slot", "pause_ms"});
  if (!flags.ok()) return 2;
  PsClientOptions o;
  o.pserver_addresses = absl::StrSplit(flags->Get("pservers"), ',');
  o.num_shards = Int(*flags, "num_shards", 16);
  o.row_dim = 1;
  o.deadline = absl::Milliseconds(Int(*flags, "deadline_ms", 2000));
  o.retry_timeout = absl::Milliseconds(Int(*flags, "retry_ms", 30000));
  o.max_keys_per_request = 512;
  // Each run is a new writer, as each trainer incarnation is: reusing an id
  // would make its sequences 1, 2, ... look like replays of an earlier run.
  o.writer_id = Int(*flags, "writer", std::random_device{}());
  const int keys_n = Int(*flags, "keys", 1000);
  const int rounds = Int(*flags, "rounds", 100);
  const int slot = Int(*flags, "key_slot", 1);
  const absl::Duration pause = absl::Milliseconds(Int(*flags, "pause_ms", 0));

  std::vector<uint64_t> keys(keys_n);
  for (int i = 0; i < keys_n; ++i)
    keys[i] = FeatureSign(slot, std::to_string(i));
  std::vector<float> grads(keys_n, -1.0f), ones(keys_n, 1.0f),
      zeros(keys_n, 0.0f);
  auto client = PsClient::Create(o);
  const absl::Time start = absl::Now();
  for (int r = 0; r < rounds; ++r) {
    absl::Status s = client->PushAsync(keys, grads, ones, zeros);
    if (!s.ok()) {
      std::printf("push failed after %.2fs: %s\n",
                  absl::ToDoubleSeconds(absl::Now() - start),
                  std::string(s.message()).c_str());
      return 1;
    }
    absl::SleepFor(pause);
  }
  absl::Status s = client->Flush();
  if (!s.ok()) {
    std::printf("flush failed after %.2fs: %s\n",
                absl::ToDoubleSeconds(absl::Now() - start),
                std::string(s.message()).c_str());
    return 1;
  }
  std::vector<float> counters(keys_n);
  s = client->Pull(keys, false, counters.data());
  if (!s.ok()) {
    std::printf("pull failed: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  int low = 0, high = 0;
  for (float c : counters) {
    low += c < rounds;
    high += c > rounds;
  }
  const PsClientStats stats = client->Stats();
  std::printf(
      "%d keys x %d rounds in %.2fs: %d lost, %d doubled; %llu push "
      "requests, %llu push retries\n",
      keys_n, rounds, absl::ToDoubleSeconds(absl::Now() - start), low, high,
      static_cast<unsigned long long>(stats.pushes_sent),
      static_cast<unsigned long long>(stats.push_retries));
  return low == 0 && high == 0 ? 0 : 3;
}
