#include "collective/coordinator_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

namespace sampan {
namespace collective {

CoordinatorStore::CoordinatorStore(CoordinatorClient* client,
                                   const std::string& name,
                                   absl::Duration timeout)
    : client_(client),
      prefix_(absl::StrCat("collective/", name, "/")),
      timeout_(timeout) {}

std::string CoordinatorStore::Key(const std::string& key) const {
  return prefix_ + key;
}

void CoordinatorStore::set(const std::string& key,
                           const std::vector<char>& data) {
  absl::Status s =
      client_->KvPut(Key(key), std::string(data.begin(), data.end()));
  if (!s.ok()) throw gloo::IoException(s.ToString());
}

std::vector<char> CoordinatorStore::get(const std::string& key) {
  absl::StatusOr<std::string> value =
      client_->KvGet(Key(key), /*wait=*/true, timeout_);
  if (!value.ok()) throw gloo::IoException(value.status().ToString());
  return std::vector<char>(value->begin(), value->end());
}

void CoordinatorStore::wait(const std::vector<std::string>& keys) {
  wait(keys, absl::ToChronoMilliseconds(timeout_));
}

void CoordinatorStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  // One deadline for all keys, not one per key.
  const absl::Time deadline = absl::Now() + absl::FromChrono(timeout);
  for (const std::string& key : keys) {
    absl::Duration left =
        std::max(deadline - absl::Now(), absl::Milliseconds(1));
    absl::StatusOr<std::string> value = client_->KvGet(Key(key), true, left);
    if (!value.ok()) throw gloo::IoException(value.status().ToString());
  }
}

}  // namespace collective
}  // namespace sampan
