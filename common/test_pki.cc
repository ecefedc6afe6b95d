#include "common/test_pki.h"

#include <cstdlib>
#include <fstream>

namespace sampan {

SecurityOptions TestPki::Secured(bool mutual) const {
  SecurityOptions o;
  o.cert_file = cert;
  o.key_file = key;
  o.ca_file = ca;
  o.token_file = token_file;
  o.mutual_tls = mutual;
  return o;
}

TestPki MakeTestPki(const std::string& dir) {
  const std::string script = "set -e; mkdir -p '" + dir + "'; cd '" + dir +
                             R"(';
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sampan-test-ca \
      -keyout ca.key -out ca.pem 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
      -keyout node.key -out node.csr 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > ext
    openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
      -days 2 -extfile ext -out node.pem 2>/dev/null
    echo )" + std::string(TestPki::kToken) +
                             R"( > token
    echo 0123456789abcdef-wrong-token > wrong)";
  const std::string path = dir + ".sh";
  std::ofstream(path) << script << "\n";
  TestPki pki;
  if (std::system(("bash '" + path + "'").c_str()) != 0) return pki;
  pki.dir = dir;
  pki.ca = dir + "/ca.pem";
  pki.cert = dir + "/node.pem";
  pki.key = dir + "/node.key";
  pki.token_file = dir + "/token";
  pki.wrong_token = dir + "/wrong";
  return pki;
}

}  // namespace sampan
