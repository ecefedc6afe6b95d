// What a trainer's input costs per row through InputQueue (read, gunzip,
// parse, batch), 5 epochs of FILE in file order and through a shuffle
// window, alternated over 5 rounds on one thread; prints each setting's
// median rows/s.
//
//   input_queue_bench FILE [WINDOW_ROWS=100000] [BATCH=1024]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/input_queue.h"

namespace {

double RowsPerSecond(const sampan::JobConfig& config, size_t* rows) {
  const auto t0 = std::chrono::steady_clock::now();
  sampan::InputQueue queue(config, 0, nullptr);
  sampan::Batch batch;
  absl::Status error;
  *rows = 0;
  while (queue.Next(&batch, &error)) *rows += batch.size();
  if (!error.ok()) {
    std::fprintf(stderr, "%s\n", std::string(error.message()).c_str());
    std::exit(1);
  }
  const std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
  return *rows / s.count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: input_queue_bench FILE [WINDOW] [BATCH]\n");
    return 2;
  }
  sampan::JobConfig config;
  config.mutable_data()->add_train_files(argv[1]);
  // Several epochs: a window's buffers are grown once, then reused.
  config.mutable_data()->set_epochs(5);
  config.mutable_data()->set_max_bad_fraction(0.01);
  config.mutable_data()->set_batch_size(argc > 3 ? std::atoi(argv[3]) : 1024);
  config.mutable_cluster()->set_num_trainers(1);
  const uint32_t window = argc > 2 ? std::atoi(argv[2]) : 100000;
  std::vector<double> in_order, shuffled;
  size_t rows = 0;
  for (int round = 0; round < 5; ++round) {
    config.mutable_data()->set_shuffle_buffer_rows(0);
    in_order.push_back(RowsPerSecond(config, &rows));
    config.mutable_data()->set_shuffle_buffer_rows(window);
    shuffled.push_back(RowsPerSecond(config, &rows));
  }
  std::printf(
      "rows=%zu in_order_rows_per_s=%.0f window=%u "
      "shuffled_rows_per_s=%.0f ratio=%.3f\n",
      rows, Median(in_order), window, Median(shuffled),
      Median(shuffled) / Median(in_order));
  return 0;
}
