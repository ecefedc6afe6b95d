// gRPC status <-> absl::Status at the edges: a client's keeps the code
// (their numbering is the same) and prefixes where the call went, so an error
// read in a log names the RPC and the peer.
#ifndef SAMPAN_COMMON_GRPC_STATUS_H_
#define SAMPAN_COMMON_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sampan {

inline absl::Status GrpcToStatus(const grpc::Status& status,
                                 const std::string& where) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(where, ": ", status.error_message()));
}

// absl::Status -> gRPC status at the edge of every server: same code and
// message.
inline grpc::Status StatusToGrpc(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// The number under `key` in gRPC metadata (a call's, or an answer's initial
// or trailing metadata); 0 when absent or not a number.
inline uint64_t Uint64InMetadata(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const char* key) {
  auto it = metadata.find(key);
  uint64_t value = 0;
  if (it == metadata.end() ||
      !absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                        &value)) {
    return 0;
  }
  return value;
}

}  // namespace sampan

#endif  // SAMPAN_COMMON_GRPC_STATUS_H_
