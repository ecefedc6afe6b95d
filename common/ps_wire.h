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
//
// Rows of compact tables (common/row_format.h) travel compact when the
// client asks (PullRequest.compact_values) and it is smaller: w as float32,
// then v in the table's format. The table still pulls float32 (into a
// scratch row block), the writer encodes with nearest rounding, which gives
// back the stored codes (INT8: to within one float32 step of the scale),
// and the reader decodes into the caller's float32 rows.
#ifndef SAMPAN_COMMON_PS_WIRE_H_
#define SAMPAN_COMMON_PS_WIRE_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/row_format.h"

namespace sampan {

// A serialized PullResponse under construction: fill values(), then send
// Release(). Not thread-safe.
class PullResponseWriter {
 public:
  // `num_rows` rows of `row_dim` (w and row_dim - 1 weights of v), sent in
  // `format` (WirePullFormat's choice).
  PullResponseWriter(size_t num_rows, uint32_t row_dim,
                     RowFormat format = RowFormat::kFp32);

  // FP32: num_rows x row_dim floats, aligned for float, uninitialized until
  // written. Compact formats: the encoded rows; fill them with EncodeFrom.
  float* values() const { return values_; }
  RowFormat format() const { return format_; }
  // Compact formats: encodes num_rows rows of row_dim float32 into values().
  void EncodeFrom(const float* rows);

  // The whole message, sharing this writer's memory; call once.
  grpc::ByteBuffer Release();

 private:
  grpc::Slice slice_;           // the message, possibly after padding bytes
  size_t begin_ = 0, end_ = 0;  // the message within slice_
  float* values_ = nullptr;
  const size_t num_rows_;
  const uint32_t row_dim_;
  const RowFormat format_;
};

// 32-bit words a row of `row_dim` takes on the wire in `format`.
size_t WireRowWords(RowFormat format, uint32_t row_dim);
// How a pull of a table storing `table_format` rows answers a request that
// allows compact values: the table's format when smaller than float32.
RowFormat WirePullFormat(RowFormat table_format, uint32_t row_dim);

// Reads a serialized PullResponse from `buffer`, copying row r of its values
// (row_dim floats, decoded when values_format says compact) to
// out + positions[r] * row_dim. Sets *server_row_dim to its row_dim field
// (0 when absent). InternalError when the bytes do not parse or the values
// do not hold exactly positions.size() rows; rows in `out` may then be
// partly written.
absl::Status ScatterPullResponse(const grpc::ByteBuffer& buffer,
                                 absl::Span<const uint32_t> positions,
                                 uint32_t row_dim, float* out,
                                 uint32_t* server_row_dim);

}  // namespace sampan

#endif  // SAMPAN_COMMON_PS_WIRE_H_
