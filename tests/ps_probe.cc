// Reads rows through the C++ PsClient and prints them, one key per line:
//   ps_probe --pservers=HOST:PORT[,...] --num_shards=N --row_dim=D --keys=K1,K2
// prints "K v0 v1 ..." with %.9g floats. Used to compare what other clients
// (the Python interop test) see with what the C++ client sees.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "trainer/client/ps_client.h"

int main(int argc, char** argv) {
  using namespace sampan;
  auto flags = Flags::Parse(argc, argv, 1,
                            {"pservers", "num_shards", "row_dim", "keys"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  PsClientOptions options;
  options.shard_map =
      InitialShardMap(*flags->GetInt("num_shards", 64),
                      absl::StrSplit(flags->Get("pservers"), ','));
  options.row_dim = *flags->GetInt("row_dim", 1);
  options.retry_timeout = absl::Seconds(10);
  std::vector<uint64_t> keys;
  for (absl::string_view k : absl::StrSplit(flags->Get("keys"), ',')) {
    uint64_t key;
    if (!absl::SimpleAtoi(k, &key)) return 2;
    keys.push_back(key);
  }
  auto client = PsClient::Create(options);
  std::vector<float> rows(keys.size() * options.row_dim);
  absl::Status s = client->Pull(keys, /*is_training=*/false, rows.data());
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    std::printf("%llu", static_cast<unsigned long long>(keys[i]));
    for (uint32_t f = 0; f < options.row_dim; ++f) {
      std::printf(" %.9g", rows[i * options.row_dim + f]);
    }
    std::printf("\n");
  }
  return 0;
}
