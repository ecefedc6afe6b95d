// Transport security and authentication for every Sampan gRPC channel.
//
// Promises:
//   - With TLS configured, servers serve only TLS (a plaintext client cannot
//     talk to them) and clients verify the server against the CA file;
//     mutual TLS additionally makes servers demand and verify a client
//     certificate.
//   - With a token configured, every RPC must carry
//     `authorization: Bearer <token>`; the server compares it in constant
//     time and answers UNAUTHENTICATED before any handler runs, so a call
//     with no or a wrong token changes nothing. Tokens travel only over TLS.
//   - A server refuses to listen on a non-loopback address without both TLS
//     and a token unless `insecure` is set: an open parameter server accepts
//     writes to the model from anyone who can reach it. The same policy
//     covers /metrics (common/metrics.h), which a secured job serves over
//     TLS to scrapes that carry the token.
#ifndef SAMPAN_COMMON_SECURITY_H_
#define SAMPAN_COMMON_SECURITY_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"

namespace sampan {

struct SecurityOptions {
  // PEM files. TLS is on when cert and key are both set.
  std::string cert_file;
  std::string key_file;
  // Clients verify servers against this CA; with mutual_tls, servers verify
  // clients against it too.
  std::string ca_file;
  bool mutual_tls = false;
  // Bearer token, read from a file so it never appears in argv or configs.
  std::string token_file;
  // Allows plaintext or token-less serving on non-loopback addresses.
  bool insecure = false;

  bool tls() const { return !cert_file.empty() && !key_file.empty(); }
};

SecurityOptions SecurityOptionsFromJob(const JobConfig& config);

// The listen policy: OK when a server may listen on `host` with `options`;
// FailedPrecondition on a non-loopback host without TLS and a token (and
// not `insecure`), InvalidArgument for a token without TLS. Each message
// names the cluster.security fields to set.
absl::Status CheckListenPolicy(const SecurityOptions& options,
                               const std::string& host);

// The bearer token in options.token_file, whitespace stripped; empty when
// no token file is set. NotFound/InvalidArgument naming an unreadable file
// or a token shorter than 16 bytes.
absl::StatusOr<std::string> ReadBearerToken(const SecurityOptions& options);

// Credentials for a server on `host`. FailedPrecondition when the listen
// policy forbids it; NotFound/InvalidArgument naming an unreadable file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const SecurityOptions& options, const std::string& host);

// Credentials for channels to Sampan servers (TLS and the token when set).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const SecurityOptions& options);

// True when `a` equals `b`, in time that depends only on their lengths.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

// True for loopback hosts ("127.x.x.x", "::1", "localhost").
bool IsLoopback(const std::string& host);

}  // namespace sampan

#endif  // SAMPAN_COMMON_SECURITY_H_
