// /metrics under the listen policy: plaintext on loopback, refused on other
// addresses without TLS and a token, and over HTTPS with the bearer token
// when the job is secured; scraped with curl, certificates made by openssl.
#include "common/metrics.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/test_pki.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

const TestPki& Pki() {
  static const TestPki* pki = new TestPki(MakeTestPki(Tmp() + "/pki"));
  return *pki;
}

const std::string& Bearer() {
  static const std::string* h = new std::string(
      absl::StrCat("-H 'Authorization: Bearer ", TestPki::kToken, "' "));
  return *h;
}

struct Reply {
  int code = 0;  // 0: no HTTP reply at all
  std::string body;
};

// curl with `args` (URL last); the HTTP status and the body.
Reply Curl(const std::string& args) {
  const std::string body_path = Tmp() + "/body";
  std::remove(body_path.c_str());
  const std::string cmd = absl::StrCat("curl -s --max-time 10 -o ", body_path,
                                       " -w '%{http_code}' ", args);
  FILE* p = popen(cmd.c_str(), "r");
  char buf[16] = {0};
  const size_t n = p ? fread(buf, 1, sizeof(buf) - 1, p) : 0;
  if (p) pclose(p);
  Reply r;
  r.code = std::atoi(std::string(buf, n).c_str());
  std::ifstream in(body_path);
  std::stringstream s;
  s << in.rdbuf();
  r.body = s.str();
  return r;
}

class MetricsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(Pki().dir.empty());
    prometheus::BuildCounter()
        .Name("sampan_metrics_test_total")
        .Help("A counter of this test.")
        .Register(MetricsRegistry())
        .Add({})
        .Increment(3);
  }

  std::unique_ptr<MetricsServer> Start(const std::string& host,
                                       const SecurityOptions& security) {
    MetricsServerOptions o;
    o.host = host;
    o.security = security;
    auto server = MetricsServer::Start(o);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  }
};

TEST_F(MetricsTest, PlaintextOnLoopback) {
  auto server = Start("127.0.0.1", SecurityOptions());
  ASSERT_NE(server, nullptr);
  EXPECT_STREQ(server->scheme(), "http");
  const std::string url =
      absl::StrCat("http://127.0.0.1:", server->port(), "/metrics");
  Reply r = Curl(url);
  EXPECT_EQ(r.code, 200);
  EXPECT_NE(r.body.find("sampan_metrics_test_total 3"), std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("process_resident_memory_bytes"), std::string::npos);
  EXPECT_EQ(
      Curl(absl::StrCat("http://127.0.0.1:", server->port(), "/other")).code,
      404);
  EXPECT_EQ(Curl("-X POST " + url).code, 501);
}

TEST_F(MetricsTest, NonLoopbackNeedsTlsAndToken) {
  MetricsServerOptions o;
  o.host = "0.0.0.0";
  auto refused = MetricsServer::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status()));
  EXPECT_NE(refused.status().message().find("cluster.security.insecure"),
            std::string::npos)
      << refused.status();
  // TLS without a token is not enough either.
  o.security = Pki().Secured();
  o.security.token_file.clear();
  EXPECT_TRUE(absl::IsFailedPrecondition(MetricsServer::Start(o).status()));
  // A token without TLS would travel in plaintext.
  o.host = "127.0.0.1";
  o.security = SecurityOptions();
  o.security.token_file = Pki().token_file;
  EXPECT_TRUE(absl::IsInvalidArgument(MetricsServer::Start(o).status()));
  // `insecure` opts out, as it does for the gRPC servers.
  SecurityOptions insecure;
  insecure.insecure = true;
  auto open = Start("0.0.0.0", insecure);
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(
      Curl(absl::StrCat("http://127.0.0.1:", open->port(), "/metrics")).code,
      200);
}

TEST_F(MetricsTest, SecuredServesHttpsToTheTokenOnly) {
  auto server = Start("0.0.0.0", Pki().Secured());
  ASSERT_NE(server, nullptr);
  EXPECT_STREQ(server->scheme(), "https");
  const std::string url =
      absl::StrCat("https://localhost:", server->port(), "/metrics");
  const std::string ca = "--cacert " + Pki().ca + " ";
  Reply ok = Curl(ca + Bearer() + url);
  EXPECT_EQ(ok.code, 200);
  EXPECT_NE(ok.body.find("sampan_metrics_test_total 3"), std::string::npos)
      << ok.body;
  Reply none = Curl(ca + url);
  EXPECT_EQ(none.code, 401);
  EXPECT_EQ(none.body.find("sampan_metrics_test_total"), std::string::npos);
  Reply wrong = Curl(absl::StrCat(ca, "-H 'Authorization: Bearer ",
                                  TestPki::kToken, "x' ", url));
  EXPECT_EQ(wrong.code, 401);
  EXPECT_EQ(wrong.body.find("sampan_metrics_test_total"), std::string::npos);
  // No plaintext: an HTTP request gets no metrics.
  Reply plain = Curl(
      absl::StrCat(Bearer(), "http://127.0.0.1:", server->port(), "/metrics"));
  EXPECT_NE(plain.code, 200);
  EXPECT_EQ(plain.body.find("sampan_metrics_test_total"), std::string::npos);
  // The certificate is the job's: a client checking another name refuses it.
  EXPECT_EQ(
      Curl(ca + "--resolve other.example:" + std::to_string(server->port()) +
           ":127.0.0.1 " + "https://other.example:" +
           std::to_string(server->port()) + "/metrics")
          .code,
      0);
  // The server outlives refused and broken connections.
  EXPECT_EQ(Curl(ca + Bearer() + url).code, 200);
}

// Pages beside /metrics: the same TLS and token, except for a page that
// says it carries no data.
TEST_F(MetricsTest, PagesFollowThePolicyOfMetrics) {
  MetricsServerOptions o;
  o.host = "0.0.0.0";
  o.security = Pki().Secured();
  int renders = 0;  // read after the server is gone
  o.pages = {
      {.path = "/job",
       .render = [] { return std::string("<p>shell</p>"); },
       .without_token = true},
      {.path = "/job/body", .content_type = "text/plain", .render = [&renders] {
         return absl::StrCat("secret body ", ++renders);
       }}};
  auto server = MetricsServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string base =
      absl::StrCat("https://localhost:", (*server)->port());
  const std::string ca = "--cacert " + Pki().ca + " ";
  Reply shell = Curl(ca + base + "/job");
  EXPECT_EQ(shell.code, 200);
  EXPECT_EQ(shell.body, "<p>shell</p>");
  Reply none = Curl(ca + base + "/job/body");
  EXPECT_EQ(none.code, 401);
  EXPECT_EQ(none.body.find("secret"), std::string::npos);
  Reply body = Curl(ca + Bearer() + base + "/job/body");
  EXPECT_EQ(body.code, 200);
  EXPECT_EQ(body.body, "secret body 1");
  // Still HTTPS only, token or not.
  Reply plain =
      Curl(absl::StrCat("http://127.0.0.1:", (*server)->port(), "/job"));
  EXPECT_NE(plain.code, 200);
  server->reset();
  EXPECT_EQ(renders, 1);

  MetricsServerOptions bad;
  bad.pages = {{.path = "/metrics", .render = [] { return std::string(); }}};
  EXPECT_TRUE(absl::IsInvalidArgument(MetricsServer::Start(bad).status()));
  bad.pages = {{.path = "job", .render = [] { return std::string(); }}};
  EXPECT_TRUE(absl::IsInvalidArgument(MetricsServer::Start(bad).status()));
}

TEST_F(MetricsTest, UnreadableFilesAreErrors) {
  SecurityOptions bad = Pki().Secured();
  bad.cert_file = Pki().dir + "/missing.pem";
  MetricsServerOptions o;
  o.security = bad;
  auto s = MetricsServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing.pem"), std::string::npos)
      << s.status();
  bad = Pki().Secured();
  bad.token_file = Pki().dir + "/missing-token";
  o.security = bad;
  s = MetricsServer::Start(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing-token"), std::string::npos);
}

}  // namespace
}  // namespace sampan
