#include "sparse_table/admission.h"

#include <algorithm>

#include "common/hash.h"

namespace sampan {

AdmissionFilter::AdmissionFilter(const TableOptions& o, uint64_t seed)
    : threshold_(o.admit_after_pushes),
      width_(std::max<uint32_t>(o.sketch_width, 1)),
      probability_(o.admit_probability),
      enabled_(threshold_ > 1 || probability_ < 1.0f),
      rng_(seed) {
  if (threshold_ > 1) counters_.assign(size_t{kDepth} * width_, 0);
}

bool AdmissionFilter::OnPush(uint64_t key) {
  if (!enabled_) return true;
  if (threshold_ > 1) {
    // Count-min: increment every row's counter (saturating), estimate = min.
    // Overestimates only (collisions), so a key is never admitted late.
    uint32_t estimate = 255;
    uint64_t h = Fmix64(key ^ 0x5bd1e9955bd1e995ULL);
    for (int d = 0; d < kDepth; ++d) {
      h = Mix64(h + d);
      uint8_t& c = counters_[static_cast<size_t>(d) * width_ + h % width_];
      if (c < 255) ++c;
      estimate = std::min<uint32_t>(estimate, c);
    }
    if (estimate < std::min<uint32_t>(threshold_, 255)) return false;
  }
  if (probability_ < 1.0f) {
    return std::uniform_real_distribution<float>(0, 1)(rng_) < probability_;
  }
  return true;
}

}  // namespace sampan
