// A gloo::rendezvous::Store on the coordinator's key-value RPCs, so Gloo ranks
// find each other without a shared filesystem or Redis.
//
// Keys are prefixed with "collective/<name>/" so communicators do not clash.
// Errors are thrown as gloo::IoException (Gloo's rendezvous expects
// exceptions); every call is bounded by the store's timeout or the one Gloo
// passes. Thread-safe (the client is).
#ifndef SAMPAN_COLLECTIVE_COORDINATOR_STORE_H_
#define SAMPAN_COLLECTIVE_COORDINATOR_STORE_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/client.h"
#include "gloo/rendezvous/store.h"

namespace sampan {
namespace collective {

class CoordinatorStore : public gloo::rendezvous::Store {
 public:
  // `client` must outlive the store.
  CoordinatorStore(CoordinatorClient* client, const std::string& name,
                   absl::Duration timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits (up to the store's timeout) for `key`, then returns its value.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::string Key(const std::string& key) const;

  CoordinatorClient* client_;
  std::string prefix_;
  absl::Duration timeout_;
};

}  // namespace collective
}  // namespace sampan

#endif  // SAMPAN_COLLECTIVE_COORDINATOR_STORE_H_
