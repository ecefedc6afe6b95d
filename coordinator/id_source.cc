#include "coordinator/id_source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_digest.h"

namespace sampan {

IdSource::IdSource(std::string state_file, std::function<absl::Time()> now)
    : state_file_(std::move(state_file)), now_(std::move(now)) {}

absl::StatusOr<uint64_t> IdSource::Next() {
  absl::MutexLock lock(&mu_);
  if (!loaded_ && !state_file_.empty()) {
    // The end of the last block any coordinator reserved with this file.
    std::ifstream in(state_file_);
    std::string text;
    if (in && std::getline(in, text) &&
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &block_end_)) {
      return absl::DataLossError(absl::StrCat(
          state_file_, ": expected the end of the last block of ids, got '",
          text, "'"));
    }
  }
  loaded_ = true;
  if (next_ >= block_end_ || next_ == 0) {
    const uint64_t floor =
        static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixMillis(now_())))
        << 20;
    const uint64_t start = std::max({block_end_, floor, uint64_t{1}});
    if (!state_file_.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(
          std::filesystem::path(state_file_).parent_path(), ec);
      if (absl::Status s =
              WriteFileDurably(state_file_, absl::StrCat(start + kBlock, "\n"));
          !s.ok()) {
        return absl::UnavailableError(
            absl::StrCat("reserving ids: ", s.message()));
      }
    }
    next_ = start;
    block_end_ = start + kBlock;
  }
  return next_++;
}

}  // namespace sampan
