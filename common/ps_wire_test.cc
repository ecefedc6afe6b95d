#include "common/ps_wire.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "proto/ps.pb.h"

namespace sampan {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

// `bytes` cut into slices of `piece` bytes, so that rows straddle slices
// as they do in what gRPC receives.
grpc::ByteBuffer Sliced(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    slices.emplace_back(bytes.data() + i, std::min(piece, bytes.size() - i));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Encode(const std::vector<float>& values, uint32_t row_dim) {
  ps::PullResponse response;
  response.set_values(reinterpret_cast<const char*>(values.data()),
                      values.size() * sizeof(float));
  response.set_row_dim(row_dim);
  return response.SerializeAsString();
}

TEST(PullResponseWriterTest, IsThePullResponseEncoding) {
  for (size_t keys : {0, 1, 3, 2048, 40000}) {
    PullResponseWriter writer(keys, 16);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(writer.values()) % alignof(float),
              0u);
    for (size_t i = 0; i < keys * 16; ++i) writer.values()[i] = i * 0.5f;
    ps::PullResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(Flatten(writer.Release())));
    EXPECT_EQ(parsed.row_dim(), 16u);
    ASSERT_EQ(parsed.values().size(), keys * 16 * sizeof(float));
    std::vector<float> want(keys * 16);
    for (size_t i = 0; i < want.size(); ++i) want[i] = i * 0.5f;
    if (want.empty()) continue;  // memcmp must not see its null data()
    EXPECT_EQ(std::memcmp(parsed.values().data(), want.data(),
                          parsed.values().size()),
              0);
  }
}

TEST(ScatterPullResponseTest, PutsEachRowAtItsPosition) {
  const uint32_t dim = 3;
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<uint32_t> positions = {4, 0, 2};
  for (size_t piece : {1, 5, 7, 1000}) {
    std::vector<float> out(5 * dim, -1);
    uint32_t server_dim = 0;
    ASSERT_TRUE(ScatterPullResponse(Sliced(Encode(values, dim), piece),
                                    positions, dim, out.data(), &server_dim)
                    .ok());
    EXPECT_EQ(server_dim, dim);
    const std::vector<float> want = {4, 5,  6,  -1, -1, -1, 7, 8,
                                     9, -1, -1, -1, 1,  2,  3};
    EXPECT_EQ(out, want) << "slices of " << piece << " bytes";
  }
}

TEST(ScatterPullResponseTest, SkipsFieldsItDoesNotKnow) {
  std::string bytes = Encode({1, 2}, 2);
  bytes += std::string("\x28\x07", 2);   // field 5, varint 7
  bytes += std::string("\x22\x01x", 3);  // field 4, one byte
  std::vector<float> out(2);
  uint32_t server_dim = 0;
  ASSERT_TRUE(
      ScatterPullResponse(Sliced(bytes, 3), {0}, 2, out.data(), &server_dim)
          .ok());
  EXPECT_EQ(out, (std::vector<float>{1, 2}));
}

// Rows of v in FP16 / INT8 are sent compact when smaller: a writer's
// message decodes back (FP16 exactly; INT8 to within a float32 step of
// the scale), positions honoured, whether the message comes from the
// writer (format first) or from protobuf (fields in number order).
TEST(CompactPullTest, RoundTripsThroughWriterAndReader) {
  const uint32_t dim = 17;  // w + 16 weights
  EXPECT_EQ(WireRowWords(RowFormat::kFp32, dim), 17u);
  EXPECT_EQ(WireRowWords(RowFormat::kFp16, dim), 9u);
  EXPECT_EQ(WireRowWords(RowFormat::kInt8, dim), 6u);
  EXPECT_EQ(WirePullFormat(RowFormat::kInt8, dim), RowFormat::kInt8);
  // Not smaller: float32 (INT8 at 2 weights is 3 words, as float32).
  EXPECT_EQ(WirePullFormat(RowFormat::kInt8, 3), RowFormat::kFp32);
  EXPECT_EQ(WirePullFormat(RowFormat::kFp16, 2), RowFormat::kFp32);
  EXPECT_EQ(WirePullFormat(RowFormat::kInt8, 1), RowFormat::kFp32);
  for (RowFormat f : {RowFormat::kFp16, RowFormat::kInt8}) {
    // Rows as a compact table stores them: values its format holds.
    const size_t keys = 50;
    std::vector<float> rows(keys * dim);
    for (size_t r = 0; r < keys; ++r) {
      std::vector<float> v(dim - 1), words(EmbeddingWords(f, dim - 1));
      for (uint32_t j = 0; j < dim - 1; ++j) {
        v[j] = 0.01f * ((r * 31 + j * 7) % 23) - 0.1f;
      }
      EncodeEmbedding(f, Rounding::kStochastic, r, v.data(), v.size(),
                      words.data());
      rows[r * dim] = 0.25f * r;
      DecodeEmbedding(f, words.data(), dim - 1, &rows[r * dim + 1]);
    }
    PullResponseWriter writer(keys, dim, f);
    writer.EncodeFrom(rows.data());
    const std::string bytes = Flatten(writer.Release());
    ps::PullResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    EXPECT_EQ(parsed.values_format(), f == RowFormat::kFp16 ? 2u : 3u);
    EXPECT_EQ(parsed.values().size(), keys * WireRowWords(f, dim) * 4);
    std::vector<uint32_t> positions(keys);
    for (size_t r = 0; r < keys; ++r) positions[r] = keys - 1 - r;
    // Protobuf's own encoding of the same message: values first.
    for (const std::string& message : {bytes, parsed.SerializeAsString()}) {
      std::vector<float> out(keys * dim, -1);
      uint32_t server_dim = 0;
      ASSERT_TRUE(ScatterPullResponse(Sliced(message, 13), positions, dim,
                                      out.data(), &server_dim)
                      .ok());
      EXPECT_EQ(server_dim, dim);
      for (size_t r = 0; r < keys; ++r) {
        const float* got = &out[positions[r] * dim];
        EXPECT_EQ(got[0], rows[r * dim]) << "w of row " << r;
        for (uint32_t j = 1; j < dim; ++j) {
          const float want = rows[r * dim + j];
          if (f == RowFormat::kFp16) {
            ASSERT_EQ(got[j], want) << r << "," << j;
          } else {
            ASSERT_NEAR(got[j], want, std::fabs(want) * 1e-6f) << r << "," << j;
          }
        }
      }
    }
  }
}

TEST(ScatterPullResponseTest, WrongRowCountNamesSizes) {
  std::vector<float> out(4);
  uint32_t server_dim = 0;
  const absl::Status s = ScatterPullResponse(
      Sliced(Encode({1, 2, 3}, 3), 64), {0, 1}, 2, out.data(), &server_dim);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(s.message(), "got 12 bytes for 2 keys")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "server says 3")) << s;
}

TEST(ScatterPullResponseTest, TruncatedMessageIsAnError) {
  const std::string bytes = Encode({1, 2, 3, 4}, 2);
  std::vector<float> out(4);
  uint32_t server_dim = 0;
  // (Cutting the trailing row_dim field off whole leaves a valid message.)
  for (size_t cut : {size_t{1}, size_t{5}, bytes.size() - 3}) {
    EXPECT_FALSE(ScatterPullResponse(Sliced(bytes.substr(0, cut), 4), {0, 1}, 2,
                                     out.data(), &server_dim)
                     .ok())
        << "cut at " << cut;
  }
}

}  // namespace
}  // namespace sampan
