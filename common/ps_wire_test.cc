#include "common/ps_wire.h"

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
    PullResponseWriter writer(keys * 16, 16);
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
  bytes += std::string("\x18\x07", 2);   // field 3, varint 7
  bytes += std::string("\x22\x01x", 3);  // field 4, one byte
  std::vector<float> out(2);
  uint32_t server_dim = 0;
  ASSERT_TRUE(
      ScatterPullResponse(Sliced(bytes, 3), {0}, 2, out.data(), &server_dim)
          .ok());
  EXPECT_EQ(out, (std::vector<float>{1, 2}));
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
