#include "common/ps_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// PullResponse's fields: values = 1 (bytes), row_dim = 2 (uint32).
constexpr uint32_t kValuesTag =
    (1 << 3) | WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr uint32_t kRowDimTag = (2 << 3) | WireFormatLite::WIRETYPE_VARINT;

uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  return CodedOutputStream::WriteVarint64ToArray(v, p);
}

}  // namespace

PullResponseWriter::PullResponseWriter(size_t num_floats, uint32_t row_dim) {
  const size_t value_bytes = num_floats * sizeof(float);
  // proto3 leaves fields at their default out of the encoding.
  const size_t header =
      value_bytes == 0 ? 0 : 1 + CodedOutputStream::VarintSize64(value_bytes);
  const size_t trailer =
      row_dim == 0 ? 0 : 1 + CodedOutputStream::VarintSize32(row_dim);
  // Room to shift the message so that the values land float-aligned.
  slice_ = grpc::Slice(header + value_bytes + trailer + alignof(float) - 1);
  uint8_t* base = const_cast<uint8_t*>(slice_.begin());
  begin_ = (alignof(float) -
            (reinterpret_cast<uintptr_t>(base) + header) % alignof(float)) %
           alignof(float);
  end_ = begin_ + header + value_bytes + trailer;
  uint8_t* p = base + begin_;
  if (value_bytes > 0) {
    *p++ = kValuesTag;
    p = WriteVarint(value_bytes, p);
  }
  values_ = reinterpret_cast<float*>(p);
  p += value_bytes;
  if (row_dim > 0) {
    *p++ = kRowDimTag;
    WriteVarint(row_dim, p);
  }
}

grpc::ByteBuffer PullResponseWriter::Release() {
  grpc::Slice message = slice_.sub(begin_, end_);
  return grpc::ByteBuffer(&message, 1);
}

absl::Status ScatterPullResponse(const grpc::ByteBuffer& buffer,
                                 absl::Span<const uint32_t> positions,
                                 uint32_t row_dim, float* out,
                                 uint32_t* server_row_dim) {
  grpc::ByteBuffer shared(buffer);  // the reader needs a mutable buffer
  grpc::ProtoBufferReader reader(&shared);
  CodedInputStream in(&reader);
  const size_t row_bytes = size_t{row_dim} * sizeof(float);
  const size_t want = positions.size() * row_bytes;
  *server_row_dim = 0;
  size_t got = 0;  // bytes of the last values field
  bool rows_copied = positions.empty();
  while (const uint32_t tag = in.ReadTag()) {
    if (tag == kValuesTag) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) break;
      got = length;
      // Like protobuf, the last occurrence of the field wins.
      rows_copied = length == want;
      if (!rows_copied) {
        if (!in.Skip(length)) break;
        continue;
      }
      for (uint32_t i : positions) {
        if (!in.ReadRaw(out + size_t{i} * row_dim, row_bytes)) {
          return absl::InternalError("PullResponse: values truncated");
        }
      }
    } else if (tag == kRowDimTag) {
      if (!in.ReadVarint32(server_row_dim)) break;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  if (!in.ConsumedEntireMessage() || !reader.status().ok()) {
    return absl::InternalError("PullResponse: malformed message");
  }
  if (!rows_copied) {
    return absl::InternalError(
        absl::StrCat("got ", got, " bytes for ", positions.size(),
                     " keys, expected row_dim ", row_dim, " (server says ",
                     *server_row_dim, ")"));
  }
  return absl::OkStatus();
}

}  // namespace sampan
