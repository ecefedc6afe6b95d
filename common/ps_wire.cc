#include "common/ps_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

// PullResponse's fields: values = 1 (bytes), row_dim = 2 (uint32),
// values_format = 3 (uint32).
constexpr uint32_t kValuesTag =
    (1 << 3) | WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr uint32_t kRowDimTag = (2 << 3) | WireFormatLite::WIRETYPE_VARINT;
constexpr uint32_t kFormatTag = (3 << 3) | WireFormatLite::WIRETYPE_VARINT;

// values_format numbers RowFormat as job.proto's RowFormatType (FP32 = 1);
// 0 (absent) is float32 too.
uint32_t FormatNumber(RowFormat f) { return static_cast<uint32_t>(f) + 1; }

uint8_t* WriteVarint(uint64_t v, uint8_t* p) {
  return CodedOutputStream::WriteVarint64ToArray(v, p);
}

}  // namespace

size_t WireRowWords(RowFormat format, uint32_t row_dim) {
  return row_dim == 0 ? 0 : 1 + EmbeddingWords(format, row_dim - 1);
}

RowFormat WirePullFormat(RowFormat table_format, uint32_t row_dim) {
  return WireRowWords(table_format, row_dim) < row_dim ? table_format
                                                       : RowFormat::kFp32;
}

PullResponseWriter::PullResponseWriter(size_t num_rows, uint32_t row_dim,
                                       RowFormat format)
    : num_rows_(num_rows), row_dim_(row_dim), format_(format) {
  const size_t value_bytes =
      num_rows * WireRowWords(format, row_dim) * sizeof(float);
  const bool compact = format != RowFormat::kFp32;
  // proto3 leaves fields at their default out of the encoding. A compact
  // format comes first, so that a reader knows it before the values.
  const size_t format_bytes = compact ? 2 : 0;
  const size_t header =
      format_bytes +
      (value_bytes == 0 ? 0 : 1 + CodedOutputStream::VarintSize64(value_bytes));
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
  if (compact) {
    *p++ = kFormatTag;
    *p++ = static_cast<uint8_t>(FormatNumber(format));
  }
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

void PullResponseWriter::EncodeFrom(const float* rows) {
  const size_t words = WireRowWords(format_, row_dim_);
  for (size_t r = 0; r < num_rows_; ++r) {
    const float* row = rows + r * row_dim_;
    float* out = values_ + r * words;
    out[0] = row[0];
    EncodeEmbedding(format_, Rounding::kNearest, 0, row + 1, row_dim_ - 1,
                    out + 1);
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
  uint32_t format = 0;
  std::string compact;  // values not float32-sized: decoded at the end
  while (const uint32_t tag = in.ReadTag()) {
    if (tag == kValuesTag) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) break;
      got = length;
      // Like protobuf, the last occurrence of the field wins. A compact
      // row is always smaller than a float32 one (WirePullFormat), so the
      // length tells them apart whatever order the fields came in.
      rows_copied = length == want;
      compact.clear();
      if (!rows_copied) {
        if (!in.ReadString(&compact, length)) break;
        continue;
      }
      for (uint32_t i : positions) {
        if (!in.ReadRaw(out + size_t{i} * row_dim, row_bytes)) {
          return absl::InternalError("PullResponse: values truncated");
        }
      }
    } else if (tag == kRowDimTag) {
      if (!in.ReadVarint32(server_row_dim)) break;
    } else if (tag == kFormatTag) {
      if (!in.ReadVarint32(&format)) break;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      break;
    }
  }
  if (!in.ConsumedEntireMessage() || !reader.status().ok()) {
    return absl::InternalError("PullResponse: malformed message");
  }
  if (!rows_copied && !compact.empty() && (format == 2 || format == 3)) {
    const RowFormat f = format == 2 ? RowFormat::kFp16 : RowFormat::kInt8;
    const size_t words = WireRowWords(f, row_dim);
    if (compact.size() == positions.size() * words * sizeof(float)) {
      // std::string's buffer is aligned for float, and so is each row.
      const float* rows = reinterpret_cast<const float*>(compact.data());
      for (size_t r = 0; r < positions.size(); ++r) {
        float* dst = out + size_t{positions[r]} * row_dim;
        dst[0] = rows[r * words];
        DecodeEmbedding(f, rows + r * words + 1, row_dim - 1, dst + 1);
      }
      rows_copied = true;
    }
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
