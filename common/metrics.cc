#include "common/metrics.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/text_serializer.h"

namespace sampan {

uint64_t ResidentMemoryBytes() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<uint64_t>(std::max(0L, pages_resident)) *
         static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

namespace {

// Process metrics in the names every Prometheus client library uses.
class ProcessCollector : public prometheus::Collectable {
 public:
  ProcessCollector() : start_(absl::ToUnixSeconds(absl::Now())) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    return {Gauge("process_resident_memory_bytes", "Resident memory size.",
                  static_cast<double>(ResidentMemoryBytes())),
            Counter("process_cpu_seconds_total",
                    "User and system CPU time spent.", CpuSeconds()),
            Gauge("process_start_time_seconds",
                  "Start time of the process since the Unix epoch.", start_)};
  }

 private:
  static prometheus::MetricFamily Gauge(const char* name, const char* help,
                                        double value) {
    prometheus::MetricFamily f{name, help, prometheus::MetricType::Gauge, {}};
    f.metric.emplace_back();
    f.metric.back().gauge.value = value;
    return f;
  }

  static prometheus::MetricFamily Counter(const char* name, const char* help,
                                          double value) {
    prometheus::MetricFamily f{name, help, prometheus::MetricType::Counter, {}};
    f.metric.emplace_back();
    f.metric.back().counter.value = value;
    return f;
  }

  static double CpuSeconds() {
    std::ifstream stat("/proc/self/stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stol(field);
      if (i == 15) stime = std::stol(field);
    }
    return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  }

  const double start_;
};

// The last OpenSSL error as text, for messages.
std::string SslError() {
  char buf[256] = "unknown error";
  const unsigned long e = ERR_get_error();
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// A TLS server context from the job's certificate chain and key files.
absl::StatusOr<SSL_CTX*> NewTlsContext(const SecurityOptions& security) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return absl::InternalError("metrics: SSL_CTX_new: " + SslError());
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  absl::Status status;
  if (SSL_CTX_use_certificate_chain_file(ctx, security.cert_file.c_str()) !=
      1) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "metrics: cannot use TLS cert ", security.cert_file, ": ", SslError()));
  } else if (SSL_CTX_use_PrivateKey_file(ctx, security.key_file.c_str(),
                                         SSL_FILETYPE_PEM) != 1 ||
             SSL_CTX_check_private_key(ctx) != 1) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "metrics: cannot use TLS key ", security.key_file, ": ", SslError()));
  }
  if (!status.ok()) {
    SSL_CTX_free(ctx);
    return status;
  }
  return ctx;
}

}  // namespace

// Owned by a shared_ptr that lives until exit, as prometheus-cpp's
// collectables usually are.
const std::shared_ptr<prometheus::Registry>& SharedRegistry() {
  static auto* registry = new std::shared_ptr<prometheus::Registry>(
      std::make_shared<prometheus::Registry>());
  return *registry;
}

prometheus::Registry& MetricsRegistry() { return *SharedRegistry(); }

const std::vector<double>& LatencyBuckets() {
  static const auto* buckets = new std::vector<double>{
      5e-5,   1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 7.5e-3, 1e-2,
      2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1,      2.5,  10};
  return *buckets;
}

// One event loop on its own thread. Owner: the MetricsServer; the loop
// thread alone touches `base`, `http` and the connections after Start()
// returns, and the destructor touches them only after joining it.
struct MetricsServer::Impl {
  SSL_CTX* tls = nullptr;       // null: plaintext
  std::string expected;         // "Bearer <token>"; empty: no token asked for
  std::vector<HttpPage> pages;  // read-only once the loop runs
  event_base* base = nullptr;
  evhttp* http = nullptr;
  event* ticker = nullptr;  // polls `stop` on the loop thread
  std::atomic<bool> stop{false};
  ProcessCollector process;
  std::thread loop;

  ~Impl() {
    stop = true;
    if (loop.joinable()) loop.join();
    if (ticker != nullptr) event_free(ticker);
    if (http != nullptr) evhttp_free(http);
    if (base != nullptr) event_base_free(base);
    if (tls != nullptr) SSL_CTX_free(tls);
  }

  // Every connection of a TLS server starts with a server-side handshake.
  static bufferevent* TlsConnection(event_base* base, void* arg) {
    SSL* ssl = SSL_new(static_cast<SSL_CTX*>(arg));
    // Null (out of memory) would make evhttp fall back to plaintext; Serve
    // refuses any request that arrives without TLS.
    if (ssl == nullptr) {
      return bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    bufferevent* bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (bev != nullptr) bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
  }

  static void Tick(evutil_socket_t, short, void* arg) {
    Impl* impl = static_cast<Impl*>(arg);
    if (impl->stop) event_base_loopbreak(impl->base);
  }

  static void NotFound(evhttp_request* req, void*) {
    evhttp_send_error(req, HTTP_NOTFOUND, nullptr);
  }

  static void Handle(evhttp_request* req, void* arg) {
    static_cast<Impl*>(arg)->Serve(req);
  }

  // A page's callback: `arg` is one of `pages`; the Impl is its owner's.
  struct PageArg {
    Impl* impl;
    const HttpPage* page;
  };
  std::vector<std::unique_ptr<PageArg>> page_args;

  static void HandlePage(evhttp_request* req, void* arg) {
    const PageArg* a = static_cast<const PageArg*>(arg);
    if (!a->impl->Allowed(req, a->page->without_token)) return;
    const std::string text = a->page->render();
    Reply(req, a->page->content_type, text);
  }

  static void Reply(evhttp_request* req, const std::string& content_type,
                    const std::string& text) {
    evbuffer* body = evbuffer_new();
    evbuffer_add(body, text.data(), text.size());
    evkeyvalq* headers = evhttp_request_get_output_headers(req);
    evhttp_add_header(headers, "Content-Type", content_type.c_str());
    evhttp_add_header(headers, "Cache-Control", "no-store");
    evhttp_send_reply(req, HTTP_OK, "OK", body);
    evbuffer_free(body);
  }

  // Sends the refusal and returns false for a request the policy refuses.
  bool Allowed(evhttp_request* req, bool without_token) {
    if (tls != nullptr) {
      bufferevent* bev =
          evhttp_connection_get_bufferevent(evhttp_request_get_connection(req));
      if (bev == nullptr || bufferevent_openssl_get_ssl(bev) == nullptr) {
        evhttp_send_error(req, 403, "TLS required");
        return false;
      }
    }
    if (!expected.empty() && !without_token) {
      const char* got = evhttp_find_header(
          evhttp_request_get_input_headers(req), "Authorization");
      if (got == nullptr || !ConstantTimeEquals(got, expected)) {
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "WWW-Authenticate", "Bearer");
        evhttp_send_error(req, 401, "Unauthorized");
        return false;
      }
    }
    return true;
  }

  void Serve(evhttp_request* req) {
    if (!Allowed(req, /*without_token=*/false)) return;
    std::vector<prometheus::MetricFamily> families =
        SharedRegistry()->Collect();
    for (prometheus::MetricFamily& f : process.Collect()) {
      families.push_back(std::move(f));
    }
    Reply(req, "text/plain; version=0.0.4; charset=utf-8",
          prometheus::TextSerializer().Serialize(families));
  }
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const MetricsServerOptions& options) {
  const SecurityOptions& security = options.security;
  if (absl::Status s = CheckListenPolicy(security, options.host); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("metrics: ", s.message()));
  }
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<std::string> token = ReadBearerToken(security);
  if (!token.ok()) return token.status();
  if (!token->empty()) impl->expected = absl::StrCat("Bearer ", *token);
  if (security.tls()) {
    absl::StatusOr<SSL_CTX*> ctx = NewTlsContext(security);
    if (!ctx.ok()) return ctx.status();
    impl->tls = *ctx;
  }
  // A scraper that hangs up mid-reply must not kill the process.
  signal(SIGPIPE, SIG_IGN);
  impl->base = event_base_new();
  impl->http = impl->base ? evhttp_new(impl->base) : nullptr;
  if (impl->http == nullptr) {
    return absl::InternalError("metrics: cannot create an event loop");
  }
  evhttp_set_allowed_methods(impl->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_timeout(impl->http, 10);  // seconds, against stalled clients
  evhttp_set_max_headers_size(impl->http, 16 << 10);
  evhttp_set_max_body_size(impl->http, 1 << 10);
  if (impl->tls != nullptr) {
    evhttp_set_bevcb(impl->http, &Impl::TlsConnection, impl->tls);
  }
  evhttp_set_cb(impl->http, "/metrics", &Impl::Handle, impl.get());
  impl->pages = options.pages;
  for (const HttpPage& page : impl->pages) {
    if (page.path.empty() || page.path[0] != '/' || page.path == "/metrics" ||
        !page.render) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics: page '", page.path,
                       "' needs a path starting with / (not /metrics) and a "
                       "render function"));
    }
    impl->page_args.push_back(
        std::make_unique<Impl::PageArg>(Impl::PageArg{impl.get(), &page}));
    evhttp_set_cb(impl->http, page.path.c_str(), &Impl::HandlePage,
                  impl->page_args.back().get());
  }
  evhttp_set_gencb(impl->http, &Impl::NotFound, nullptr);
  evhttp_bound_socket* socket = evhttp_bind_socket_with_handle(
      impl->http, options.host.c_str(), static_cast<uint16_t>(options.port));
  if (socket == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "metrics: cannot listen on ", options.host, ":", options.port));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(evhttp_bound_socket_get_fd(socket),
                  reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::UnavailableError(
        absl::StrCat("metrics: no listening port on ", options.host));
  }
  const int port =
      addr.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  impl->ticker = event_new(impl->base, -1, EV_PERSIST, &Impl::Tick, impl.get());
  const timeval every{0, 50 * 1000};
  event_add(impl->ticker, &every);
  Impl* raw = impl.get();
  impl->loop = std::thread([raw] { event_base_dispatch(raw->base); });
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(std::move(impl), port));
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

MetricsServer::~MetricsServer() = default;

const char* MetricsServer::scheme() const {
  return impl_->tls != nullptr ? "https" : "http";
}

}  // namespace sampan
