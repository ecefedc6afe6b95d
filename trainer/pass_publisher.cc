#include "trainer/pass_publisher.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/pass_pattern.h"
#include "trainer/model_export.h"
#include "trainer/model_version.h"
#include "trainer/pass_score.h"
#include "trainer/report.h"
#include "trainer/warm_start.h"

namespace sampan {
namespace {

std::string ScoreKey(uint64_t generation, uint64_t pass, int rank) {
  return absl::StrCat("stream/g", generation, "/score/", pass, "/", rank);
}

double NowSeconds() { return absl::ToUnixMicros(absl::Now()) * 1e-6; }

}  // namespace

PassPublisher::PassPublisher(const PassPublisherOptions& options)
    : o_(options),
      root_(VersionsRoot(*options.config)),
      trainers_(static_cast<int>(options.config->cluster().num_trainers())) {}

bool PassPublisher::IsBase(const coord::StreamPass& pass) const {
  if (pass.first() || base_version_ == 0) return true;
  const uint32_t every = o_.config->data().stream().base_every_passes();
  if (every > 0) return pass.index() % every == 0;
  return pass.day() != prev_day_;
}

absl::Status PassPublisher::Barrier(const coord::StreamPass& pass,
                                    const char* what) {
  return o_.coordinator->Barrier(
      absl::StrCat("g", o_.generation, "/pass-", pass.index(), "-", what),
      trainers_, o_.rank);
}

absl::Status PassPublisher::BeginPass(const coord::StreamPass& pass) {
  if (o_.rank != 0) return absl::OkStatus();
  if (pass.first()) {
    // A job that starts owns its output_dir: versions of an earlier job
    // there would be taken for this one's (LATEST, retention).
    std::error_code ec;
    const uintmax_t removed = std::filesystem::remove_all(root_, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat(
          "removing the earlier versions in ", root_, ": ", ec.message()));
    }
    if (removed > 0) {
      SAMPAN_LOG(INFO) << "removed the versions of an earlier job in " << root_;
    }
  }
  return ClearStaging(root_, pass.index() + 1);
}

absl::Status PassPublisher::PutScore(const coord::StreamPass& pass,
                                     const coord::PassScore& score) {
  absl::Status s =
      o_.coordinator->KvPut(ScoreKey(o_.generation, pass.index(), o_.rank),
                            score.SerializeAsString());
  if (!s.ok()) return s;
  return Barrier(pass, "scored");
}

absl::Status PassPublisher::WritePart(const std::string& dir,
                                      std::vector<uint64_t> keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // A row that reads all zeros has no row on the pservers (deleted by the
  // shrink, or never admitted): a key without a row scores as zeros.
  return ExportSparsePart(
      dir, o_.rank, std::move(keys), o_.model->row_dim(),
      [this](absl::Span<const uint64_t> want, float* out) {
        return o_.ps->Pull(want, /*is_training=*/false, out);
      },
      /*drop_zero_rows=*/true);
}

absl::StatusOr<coord::PassResult> PassPublisher::EndPass(
    const coord::StreamPass& pass, std::vector<uint64_t> touched,
    const std::function<absl::StatusOr<DenseModelState>()>& dense) {
  const bool base = IsBase(pass);
  const uint64_t version = pass.index() + 1;
  const absl::Time start = absl::Now();
  if (absl::Status s = Barrier(pass, "trained"); !s.ok()) return s;
  uint64_t evicted = 0;
  if (base) {
    if (o_.rank == 0 && !pass.first()) {
      absl::StatusOr<ShrinkTotals> shrunk = o_.ps->Shrink(
          absl::Seconds(o_.config->cluster().wait_timeout_seconds()));
      if (!shrunk.ok()) return shrunk.status();
      evicted = shrunk->deleted_rows;
      SAMPAN_LOG(INFO) << "pass " << pass.name() << ": lifecycle deleted "
                       << shrunk->deleted_rows << " rows, " << shrunk->rows
                       << " left";
    }
    if (absl::Status s = Barrier(pass, "shrunk"); !s.ok()) return s;
    // Every key the table may hold: the previous chain's, or on the first
    // pass of a warm-started job the init model's.
    if (base_version_ > 0 || !o_.config->init_model().empty()) {
      absl::StatusOr<std::vector<uint64_t>> chain =
          base_version_ > 0 ? ChainKeys(root_, version - 1, o_.rank, trainers_)
                            : InitModelKeys(*o_.config, o_.rank, trainers_);
      if (!chain.ok()) return chain.status();
      touched.insert(touched.end(), chain->begin(), chain->end());
    }
  }
  const std::string staging = StagingDir(root_, version);
  if (absl::Status s = WritePart(staging, std::move(touched)); !s.ok()) {
    return s;
  }
  DenseModelState state;
  if (o_.rank == 0) {
    absl::StatusOr<DenseModelState> d = dense();
    if (!d.ok()) return d.status();
    state = std::move(*d);
  }
  if (absl::Status s = Barrier(pass, "exported"); !s.ok()) return s;
  const double stall = absl::ToDoubleSeconds(absl::Now() - start);
  SAMPAN_LOG(INFO) << "trainer " << o_.rank << ": pass " << pass.name()
                   << " exported for version " << version << " in " << stall
                   << " s (training waited)";
  prev_day_ = pass.day();
  if (base) base_version_ = version;
  if (o_.rank != 0) return coord::PassResult();
  return Publish(pass, base, evicted, stall, state);
}

absl::StatusOr<coord::PassResult> PassPublisher::Publish(
    const coord::StreamPass& pass, bool base, uint64_t evicted,
    double stall_seconds, const DenseModelState& dense) {
  const absl::Time start = absl::Now();
  const uint64_t version = pass.index() + 1;
  const std::string staging = StagingDir(root_, version);
  absl::Status s = SaveDenseModel(DenseModelPath(staging), *o_.model, dense);
  if (!s.ok()) return s;
  std::vector<coord::PassScore> scores;
  for (int r = 0; r < trainers_; ++r) {
    absl::StatusOr<std::string> v = o_.coordinator->KvGet(
        ScoreKey(o_.generation, pass.index(), r), /*wait=*/true,
        absl::Seconds(o_.config->cluster().wait_timeout_seconds()));
    if (!v.ok()) return v.status();
    coord::PassScore score;
    if (!score.ParseFromString(*v)) {
      return absl::DataLossError(absl::StrCat(
          "coordinator key ", ScoreKey(o_.generation, pass.index(), r),
          " is not a pass score"));
    }
    scores.push_back(std::move(score));
  }
  coord::PassResult r = MergePassScores(scores);
  VersionInfo info;
  info.version = version;
  info.base = base;
  info.base_version = base_version_;
  info.pass = pass.name();
  info.pass_index = pass.index();
  info.marker_unix_seconds = pass.ready_unix_seconds();
  ModelManifest manifest;
  manifest.sparse_parts = trainers_;
  s = PublishVersion(root_, *o_.config, manifest, info,
                     o_.config->data().stream().keep_bases());
  if (!s.ok()) return s;
  r.set_index(pass.index());
  r.set_name(pass.name());
  r.set_version(version);
  r.set_base(base);
  r.set_freshness_seconds(NowSeconds() - pass.ready_unix_seconds());
  r.set_rows_evicted(evicted);
  r.set_stall_seconds(stall_seconds);
  r.set_publish_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  SAMPAN_LOG(INFO) << absl::StrFormat(
      "pass %s: progressive AUC %.4f logloss %.4f COPC %.3f on %d rows "
      "(scored before training); version %d (%s) published %.1f s after "
      "its marker",
      pass.name(), r.auc(), r.logloss(), r.copc(), r.rows_scored(), version,
      base ? "base" : "delta", r.freshness_seconds());
  if (absl::Status a = AppendPassLine(r); !a.ok()) return a;
  return r;
}

std::string PassPublisher::PassesPath() const {
  return absl::StrCat(o_.config->output_dir(), "/passes.tsv");
}

absl::Status PassPublisher::Resume(uint64_t next_index,
                                   const std::string& last_pass) {
  if (next_index == 0) return absl::OkStatus();
  // Version next_index was published after pass next_index - 1, before the
  // checkpoint was taken.
  absl::StatusOr<std::vector<VersionManifest>> versions = ListVersions(root_);
  if (!versions.ok()) return versions.status();
  for (const VersionManifest& v : *versions) {
    if (v.version() == next_index) base_version_ = v.base_version();
  }
  if (base_version_ == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("resuming after pass ", last_pass, ": version ",
                     next_index, " is not published in ", root_));
  }
  absl::StatusOr<PassPattern> pattern =
      PassPattern::Compile(o_.config->data().stream().pattern());
  if (!pattern.ok()) return pattern.status();
  if (std::optional<PassTime> t = pattern->Match(last_pass)) prev_day_ = t->day;
  if (o_.rank != 0) return absl::OkStatus();
  // passes.tsv: the passes up to the checkpoint only.
  std::ifstream in(PassesPath());
  std::string kept, line;
  for (int n = 0; std::getline(in, line); ++n) {
    if (n > 0 && std::strtoull(line.c_str(), nullptr, 10) >= next_index) break;
    kept += line + "\n";
  }
  in.close();
  std::ofstream out(PassesPath(), std::ios::trunc);
  out << kept;
  out.close();
  if (!out)
    return absl::InternalError(absl::StrCat("cannot write ", PassesPath()));
  SAMPAN_LOG(INFO) << "stream resumes after pass " << last_pass
                   << "; the next delta builds on base v" << base_version_;
  return absl::OkStatus();
}

absl::Status PassPublisher::WriteResult(const std::string& path,
                                        bool append) const {
  std::ifstream in(PassesPath());
  std::string line;
  std::getline(in, line);  // header
  int passes = 0, scored = 0;
  double auc_sum = 0;
  std::vector<std::string> last;
  std::vector<PassPoint> points;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() < 10) continue;
    ++passes;
    PassPoint p;
    p.index = std::atoi(f[0].c_str());
    p.name = f[1];
    p.rows_scored = std::strtoull(f[2].c_str(), nullptr, 10);
    p.auc = std::strtod(f[3].c_str(), nullptr);
    p.logloss = std::strtod(f[4].c_str(), nullptr);
    p.copc = std::strtod(f[5].c_str(), nullptr);
    p.version = absl::StrFormat("v-%06d %s", std::atoi(f[6].c_str()), f[7]);
    p.freshness_seconds = std::strtod(f[8].c_str(), nullptr);
    p.rows_evicted = std::strtoull(f[9].c_str(), nullptr, 10);
    points.push_back(std::move(p));
    if (std::strtoull(f[2].c_str(), nullptr, 10) > 0) {
      auc_sum += std::strtod(f[3].c_str(), nullptr);
      ++scored;
    }
    last = std::move(f);
  }
  std::string text = absl::StrCat("passes=", passes, "\n");
  if (scored > 0) {
    absl::StrAppend(&text, absl::StrFormat("progressive_auc_mean=%.6f\n",
                                           auc_sum / scored));
  }
  if (!last.empty()) {
    absl::StrAppend(&text, "last_pass=", last[1], "\n",
                    "last_version=", last[6], "\n",
                    "last_progressive_auc=", last[3], "\n",
                    "last_progressive_logloss=", last[4], "\n",
                    "last_progressive_copc=", last[5], "\n");
  }
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  // The same passes as a page: AUC and freshness over the stream.
  const std::string report =
      absl::StrCat(o_.config->output_dir(), "/report.html");
  std::ofstream page(report, std::ios::trunc);
  page << RenderPassReport(
      absl::StrCat(o_.config->name(), ": ", passes, " passes"), points);
  page.close();
  if (!page) return absl::InternalError(absl::StrCat("cannot write ", report));
  return absl::OkStatus();
}

absl::Status PassPublisher::AppendPassLine(const coord::PassResult& r) {
  const std::string path = PassesPath();
  const bool header = r.index() == 0;
  std::ofstream out(path, header ? std::ios::trunc : std::ios::app);
  if (header) {
    out << "pass\tname\trows_scored\tauc\tlogloss\tcopc\tversion\tkind\t"
           "freshness_seconds\trows_evicted\tstall_seconds\t"
           "publish_seconds\n";
  }
  out << absl::StrFormat(
      "%d\t%s\t%d\t%.6f\t%.6f\t%.4f\t%d\t%s\t%.2f\t%d\t%.3f\t%.3f\n", r.index(),
      r.name(), r.rows_scored(), r.auc(), r.logloss(), r.copc(), r.version(),
      r.base() ? "base" : "delta", r.freshness_seconds(), r.rows_evicted(),
      r.stall_seconds(), r.publish_seconds());
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace sampan
