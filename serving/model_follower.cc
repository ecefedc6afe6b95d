#include "serving/model_follower.h"

#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

// Refused versions are tried again after this many checks, in case the
// failure was passing (an I/O error, a file being replaced).
constexpr int kRetryRefusedAfterChecks = 10;

// A version or an exported model directory, rather than a versions root.
bool IsFixedModelDir(const std::string& path) {
  std::error_code ec;
  const std::string base = fs::path(path).lexically_normal().filename();
  return fs::exists(fs::path(path) / "MODEL", ec) ||
         fs::exists(fs::path(path) / "VERSION", ec) ||
         absl::StartsWith(base, "v-") || absl::StartsWith(base, ".staging-");
}

// Whether `next` reads inputs as `served` does and computes the same kind of
// network: a version of another model is refused, as its clients would send
// the wrong examples.
absl::Status SameModel(const ScoringModel& served, const ScoringModel& next) {
  const JobConfig& a = served.loaded.config;
  const JobConfig& b = next.loaded.config;
  if (a.model().SerializeAsString() != b.model().SerializeAsString() ||
      a.data().format() != b.data().format() ||
      a.data().integer_features() != b.data().integer_features() ||
      a.data().empty_field_signs() != b.data().empty_field_signs()) {
    return absl::FailedPreconditionError(absl::StrCat(
        next.loaded.dir,
        ": another model (its job.pbtxt's model or data format differs from "
        "the version served, ",
        served.loaded.dir, ")"));
  }
  return absl::OkStatus();
}

std::shared_ptr<const ServedModel> Served(
    std::unique_ptr<ScoringModel> scoring) {
  auto served = std::make_shared<ServedModel>();
  served->description = DescribeModel(scoring->loaded);
  if (scoring->loaded.version.has_value()) {
    const VersionManifest& v = *scoring->loaded.version;
    served->version = v.version();
    served->pass = v.pass();
    served->created_unix_seconds = v.created_unix_seconds();
  }
  served->rows = scoring->rows ? scoring->rows->row_count()
                               : scoring->loaded.sparse.index.size();
  served->scoring = std::move(scoring);
  return served;
}

}  // namespace

ModelFollower::ModelFollower(FollowOptions options)
    : options_(std::move(options)) {}

ModelFollower::~ModelFollower() { Stop(); }

absl::StatusOr<std::shared_ptr<const ServedModel>> ModelFollower::Load(
    const std::string& dir) const {
  if (!options_.bring_rows) {
    absl::StatusOr<std::unique_ptr<ScoringModel>> scoring =
        LoadScoringModel(dir);
    if (!scoring.ok()) return scoring.status();
    return Served(*std::move(scoring));
  }
  absl::StatusOr<std::vector<ChainMember>> chain = ResolveChain(dir);
  if (!chain.ok()) return chain.status();
  absl::StatusOr<std::shared_ptr<const RowSource>> rows =
      options_.bring_rows(*chain);
  if (!rows.ok()) return rows.status();
  LoadedModel head;
  head.dir = chain->back().dir;
  if (chain->back().version.format() != 0) {
    head.version = chain->back().version;
  }
  absl::StatusOr<ModelManifest> manifest =
      ReadModelManifest(head.dir, &head.config);
  absl::StatusOr<std::unique_ptr<ScoringModel>> scoring =
      absl::InternalError("unset");
  if (manifest.ok()) {
    head.manifest = *manifest;
    scoring = ScoringModelOf(std::move(head), *std::move(rows));
  } else {
    scoring = manifest.status();
  }
  if (!scoring.ok()) {
    if (options_.forget_rows) options_.forget_rows();
    return scoring.status();
  }
  return Served(*std::move(scoring));
}

std::shared_ptr<const ServedModel> ModelFollower::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

absl::StatusOr<uint64_t> ModelFollower::Wanted(bool* fixed) const {
  *fixed = IsFixedModelDir(options_.model);
  if (*fixed) return 0;
  if (options_.version > 0) return options_.version;
  if (options_.wanted) return options_.wanted();
  absl::StatusOr<uint64_t> latest = LatestVersion(options_.model);
  if (absl::IsNotFound(latest.status())) return 0;  // nothing published yet
  return latest;
}

absl::Status ModelFollower::Refresh() {
  std::lock_guard<std::mutex> refresh(refresh_mu_);
  const std::shared_ptr<const ServedModel> served = Current();
  bool fixed = false;
  absl::StatusOr<uint64_t> wanted = Wanted(&fixed);
  if (!wanted.ok()) {
    if (options_.on_load &&
        !(options_.wanted && absl::IsUnavailable(wanted.status()))) {
      options_.on_load(wanted.status(), nullptr);
    }
    return wanted.status();
  }
  if (fixed ? served != nullptr
            : (*wanted == 0 || (served && served->version == *wanted))) {
    return absl::OkStatus();
  }
  if (!fixed && *wanted == refused_ &&
      ++refused_checks_ < kRetryRefusedAfterChecks) {
    return absl::OkStatus();  // refused already; counted once
  }
  const std::string dir =
      fixed ? options_.model : VersionDir(options_.model, *wanted);
  absl::StatusOr<std::shared_ptr<const ServedModel>> next = Load(dir);
  absl::Status status = next.status();
  if (status.ok() && served != nullptr) {
    status = SameModel(*served->scoring, *(*next)->scoring);
    if (!status.ok() && options_.forget_rows) options_.forget_rows();
  }
  if (!status.ok() && options_.bring_rows && absl::IsUnavailable(status)) {
    SAMPAN_LOG(WARNING) << "serve: cannot load " << dir
                        << " yet: " << status.message() << "; retrying";
    return status;  // passing (a shard unreachable): not refused
  }
  if (!status.ok()) {
    refused_ = *wanted;
    refused_checks_ = 0;
    SAMPAN_LOG(ERROR) << "serve: refused " << dir << ": " << status.message()
                      << (served ? "; still serving " + served->description
                                 : std::string("; nothing to serve yet"));
    if (options_.on_load) options_.on_load(status, nullptr);
    return status;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = *next;
  }
  refused_ = 0;
  SAMPAN_LOG(INFO) << "serve: now serving " << (*next)->description << " ("
                   << (*next)->rows << " sparse rows"
                   << ((*next)->scoring->rows ? ", outside memory)" : ")");
  if (options_.on_load) options_.on_load(absl::OkStatus(), next->get());
  return absl::OkStatus();
}

void ModelFollower::Start() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = false;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void ModelFollower::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ModelFollower::Loop() {
  absl::Time next_check = absl::InfinitePast();
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_) {
    if (absl::Now() >= next_check) {
      lock.unlock();
      Refresh().IgnoreError();  // logged and counted by Refresh
      lock.lock();
      next_check = absl::Now() + options_.poll;
    }
    if (options_.on_tick) options_.on_tick(Current().get());
    const absl::Duration wait =
        std::min(absl::Seconds(1),
                 std::max(absl::ZeroDuration(), next_check - absl::Now()));
    stop_cv_.wait_for(lock, absl::ToChronoNanoseconds(wait),
                      [this] { return stop_; });
  }
}

}  // namespace sampan
