// Certificates for tests, made by openssl: a CA, a certificate it signed
// for localhost and 127.0.0.1 (extendedKeyUsage serverAuth and clientAuth,
// so servers and mutual-TLS clients can both use it), and bearer tokens.
#ifndef SAMPAN_COMMON_TEST_PKI_H_
#define SAMPAN_COMMON_TEST_PKI_H_

#include <string>

#include "common/security.h"

namespace sampan {

struct TestPki {
  std::string dir;
  std::string ca;           // dir/ca.pem
  std::string cert;         // dir/node.pem
  std::string key;          // dir/node.key
  std::string token_file;   // dir/token, holding kToken
  std::string wrong_token;  // dir/wrong, holding another token

  static constexpr char kToken[] = "0123456789abcdef-right-token";

  // TLS with the token (and client certificates with `mutual`).
  SecurityOptions Secured(bool mutual = false) const;
};

// Makes them under `dir` (created); an empty TestPki::dir when openssl
// fails.
TestPki MakeTestPki(const std::string& dir);

}  // namespace sampan

#endif  // SAMPAN_COMMON_TEST_PKI_H_
