#include "trainer/dataset_source.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace sampan {

DatasetSource::DatasetSource(const Dataset& data, size_t batch_size, int epochs,
                             bool shuffle, uint64_t seed)
    : data_(data), batch_size_(batch_size) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> epoch(data.size());
  std::iota(epoch.begin(), epoch.end(), 0);
  for (int e = 0; e < epochs; ++e) {
    if (shuffle) std::shuffle(epoch.begin(), epoch.end(), rng);
    order_.insert(order_.end(), epoch.begin(), epoch.end());
  }
}

bool DatasetSource::Next(Batch* batch, absl::Status*) {
  const size_t begin = next_.fetch_add(batch_size_);
  if (begin >= order_.size()) return false;
  const size_t n = std::min(batch_size_, order_.size() - begin);
  data_.Gather(order_.data() + begin, n, batch);
  return true;
}

}  // namespace sampan
