// PullResponse (proto/ps.proto) without the copies of its values bytes.
//
// A pull's answer is nearly all `values`: row_dim float32 per key. Through
// the generated message those bytes are written three times on the server
// (zeroed by std::string::resize, filled by the table, copied into gRPC's
// slices when serialized) and twice on the client (parsed into a
// std::string, then scattered to the caller's rows). Here the server's table
// writes straight into the slice gRPC sends, and the client copies each row
// from gRPC's received slices to its place in the caller's array. The bytes
// on the wire are exactly the PullResponse encoding, so any other gRPC client
// reads them as usual.
#ifndef SAMPAN_COMMON_PS_WIRE_H_
#define SAMPAN_COMMON_PS_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace sampan {

// A serialized PullResponse under construction: fill values(), then send
// Release(). Not thread-safe.
class PullResponseWriter {
 public:
  // `num_floats` values (keys x row_dim) and `row_dim`.
  PullResponseWriter(size_t num_floats, uint32_t row_dim);

  // num_floats floats, aligned for float, uninitialized until written.
  float* values() const { return values_; }

  // The whole message, sharing this writer's memory; call once.
  grpc::ByteBuffer Release();

 private:
  grpc::Slice slice_;           // the message, possibly after padding bytes
  size_t begin_ = 0, end_ = 0;  // the message within slice_
  float* values_ = nullptr;
};

// Reads a serialized PullResponse from `buffer`, copying row r of its values
// (row_dim floats) to out + positions[r] * row_dim. Sets *server_row_dim to
// its row_dim field (0 when absent). InternalError when the bytes do not
// parse or the values do not hold exactly positions.size() rows; rows in
// `out` may then be partly written.
absl::Status ScatterPullResponse(const grpc::ByteBuffer& buffer,
                                 absl::Span<const uint32_t> positions,
                                 uint32_t row_dim, float* out,
                                 uint32_t* server_row_dim);

}  // namespace sampan

#endif  // SAMPAN_COMMON_PS_WIRE_H_
