#include "common/security.h"

#include <atomic>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace sampan {
namespace {

constexpr char kAuthHeader[] = "authorization";

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " ", path));
  }
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  absl::StatusOr<std::string> raw = ReadFile(path, "token file");
  if (!raw.ok()) return raw.status();
  std::string token(absl::StripAsciiWhitespace(*raw));
  if (token.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("token file ", path, ": token shorter than 16 bytes"));
  }
  return token;
}

// Rejects every call whose bearer token is missing or wrong.
class TokenChecker : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenChecker(std::string token)
      : expected_(absl::StrCat("Bearer ", token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*,
                       OutputMetadata* consumed, OutputMetadata*) override {
    auto it = metadata.find(kAuthHeader);
    if (it == metadata.end()) return Refuse("missing bearer token");
    const absl::string_view got(it->second.data(), it->second.size());
    if (!ConstantTimeEquals(got, expected_)) {
      return Refuse("wrong bearer token");
    }
    consumed->insert({kAuthHeader, std::string(got)});
    return grpc::Status::OK;
  }

 private:
  // Logs the first 10 refusals and every 1000th after them, so an operator
  // sees a misconfigured client (or a probe) without a flood of lines.
  grpc::Status Refuse(const char* why) {
    const uint64_t n = refused_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n <= 10 || n % 1000 == 0) {
      SAMPAN_LOG(WARNING) << "refused a call: " << why << " (" << n
                          << " refused so far)";
    }
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why);
  }

  const std::string expected_;
  std::atomic<uint64_t> refused_{0};
};

class TokenPlugin : public grpc::MetadataCredentialsPlugin {
 public:
  explicit TokenPlugin(std::string token)
      : header_(absl::StrCat("Bearer ", token)) {}
  bool IsBlocking() const override { return false; }
  grpc::Status GetMetadata(
      grpc::string_ref, grpc::string_ref, const grpc::AuthContext&,
      std::multimap<grpc::string, grpc::string>* md) override {
    md->insert({kAuthHeader, header_});
    return grpc::Status::OK;
  }

 private:
  const std::string header_;
};

}  // namespace

SecurityOptions SecurityOptionsFromJob(const JobConfig& config) {
  const SecurityConfig& s = config.cluster().security();
  SecurityOptions o;
  o.cert_file = s.tls_cert_file();
  o.key_file = s.tls_key_file();
  o.ca_file = s.tls_ca_file();
  o.mutual_tls = s.mutual_tls();
  o.token_file = s.token_file();
  o.insecure = s.insecure();
  return o;
}

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Every byte of the longer string is read whatever the contents, so the
  // time reveals at most the lengths.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

bool IsLoopback(const std::string& host) {
  return absl::StartsWith(host, "127.") || host == "::1" || host == "[::1]" ||
         host == "localhost";
}

absl::Status CheckListenPolicy(const SecurityOptions& options,
                               const std::string& host) {
  const bool guarded = options.tls() && !options.token_file.empty();
  if (!IsLoopback(host) && !guarded && !options.insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to listen on ", host,
        " without TLS and a token: set cluster.security.tls_cert_file, "
        "tls_key_file and token_file, or cluster.security.insecure: true"));
  }
  if (!options.tls() && !options.token_file.empty()) {
    return absl::InvalidArgumentError(
        "cluster.security.token_file needs TLS: a token must not travel in "
        "plaintext");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadBearerToken(const SecurityOptions& options) {
  if (options.token_file.empty()) return std::string();
  return ReadToken(options.token_file);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const SecurityOptions& options, const std::string& host) {
  if (absl::Status s = CheckListenPolicy(options, host); !s.ok()) return s;
  if (!options.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(
      options.mutual_tls
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  absl::StatusOr<std::string> cert = ReadFile(options.cert_file, "TLS cert");
  absl::StatusOr<std::string> key = ReadFile(options.key_file, "TLS key");
  if (!cert.ok()) return cert.status();
  if (!key.ok()) return key.status();
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (options.mutual_tls) {
    absl::StatusOr<std::string> ca = ReadFile(options.ca_file, "TLS CA");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  std::shared_ptr<grpc::ServerCredentials> creds =
      grpc::SslServerCredentials(ssl);
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadToken(options.token_file);
    if (!token.ok()) return token.status();
    creds->SetAuthMetadataProcessor(std::make_shared<TokenChecker>(*token));
  }
  return creds;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const SecurityOptions& options) {
  if (!options.tls()) {
    if (!options.token_file.empty()) {
      return absl::InvalidArgumentError(
          "cluster.security.token_file needs TLS: a token must not travel in "
          "plaintext");
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(options.ca_file, "TLS CA");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  if (options.mutual_tls) {
    absl::StatusOr<std::string> cert = ReadFile(options.cert_file, "TLS cert");
    absl::StatusOr<std::string> key = ReadFile(options.key_file, "TLS key");
    if (!cert.ok()) return cert.status();
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  if (options.token_file.empty()) return creds;
  absl::StatusOr<std::string> token = ReadToken(options.token_file);
  if (!token.ok()) return token.status();
  return grpc::CompositeChannelCredentials(
      creds, grpc::MetadataCredentialsFromPlugin(
                 std::make_unique<TokenPlugin>(*token)));
}

}  // namespace sampan
