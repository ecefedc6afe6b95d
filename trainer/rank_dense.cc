#include "trainer/rank_dense.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "coordinator/checkpoint_store.h"
#include "sparse_table/job_options.h"
#include "trainer/warm_start.h"

namespace sampan {

absl::StatusOr<std::unique_ptr<RankDense>> RankDense::Start(
    const RankDenseOptions& options) {
  std::unique_ptr<RankDense> d(new RankDense(options));
  const JobConfig& config = *options.config;
  const CtrModel& model = *options.model;
  if (model.dense_size() == 0) {
    d->weights_ = NoDenseWeights();
  } else if (HasDenseTable(config)) {
    d->async_ = std::make_unique<AsyncDense>(model, model.row_dim());
    d->weights_ =
        PserverDenseWeights(d->async_.get(), options.ps_dense, model.row_dim());
    SAMPAN_LOG(INFO) << "trainer " << options.rank << ": async, "
                     << d->async_->size() << " dense weights in "
                     << d->async_->keys().size() << " pserver rows of table "
                     << kDenseTableId << ", updated there by "
                     << "model.dense_optimizer";
  } else {
    if (absl::Status s = d->StartLockstep(); !s.ok()) return s;
    d->weights_ = LockstepDenseWeights(
        d->hybrid_.get(),
        /*overlap=*/config.model().mode() != ModelConfig::SYNC);
  }
  return d;
}

// Joins the ranks' collective group (rank 0's weights, or the checkpoint's
// or init_model's, on every rank).
absl::Status RankDense::StartLockstep() {
  if (absl::Status g = PlaceDenseTower(); !g.ok()) return g;
  const JobConfig& config = *o_.config;
  HybridDenseOptions h;
  h.coordinator_address = o_.coordinator_address;
  h.rank = o_.rank;
  h.size = config.cluster().num_trainers();
  h.timeout = absl::Seconds(config.cluster().wait_timeout_seconds());
  if (const char* k = std::getenv("SAMPAN_DENSE_CHECK_EVERY")) {
    h.check_every = std::strtoull(k, nullptr, 10);
  }
  if (const char* r = std::getenv("SAMPAN_DENSE_TEST_SKEW_RANK")) {
    h.skew_rank = std::atoi(r);
  }
  h.optimizer = o_.optimizer;
  h.generation = o_.generation;
  // The rendezvous goes through the coordinator: same TLS and token.
  h.credentials = o_.credentials;
  DenseModelState initial;
  if (!o_.resume_path.empty() || !config.init_model().empty()) {
    // A resume's checkpoint, or warm start: init_model's weights and
    // optimizer state (every rank reads them).
    absl::StatusOr<DenseModelState> loaded =
        o_.resume_path.empty() ? LoadInitDense(config, *o_.model)
                               : LoadDenseModel(o_.resume_path, *o_.model);
    if (!loaded.ok()) return loaded.status();
    initial = std::move(*loaded);
    h.initial = &initial;
  }
  absl::StatusOr<std::unique_ptr<HybridDense>> d =
      HybridDense::Create(*o_.model, h);
  if (!d.ok()) return d.status();
  hybrid_ = std::move(*d);
  SAMPAN_LOG(INFO) << "trainer " << o_.rank << ": hybrid "
                   << o_.model->dense_size() << " dense weights";
  return absl::OkStatus();
}

// model.dense_device: the MLP on the GPU (gpu_) or the CPU.
absl::Status RankDense::PlaceDenseTower() {
  const DenseDevice device = o_.config->model().dense_device();
  if (device == CPU) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<GpuMlp>> g =
      GpuMlp::Create(o_.model->mlp(), o_.model->dense_size(), GpuMlpOptions());
  if (!g.ok()) {
    if (device == GPU) return g.status();
    SAMPAN_LOG(INFO) << "trainer " << o_.rank
                     << ": MLP on the CPU: " << g.status().message();
    return absl::OkStatus();
  }
  gpu_ = std::move(*g);
  SAMPAN_LOG(INFO) << "trainer " << o_.rank << ": MLP on the GPU (cuBLAS)";
  return absl::OkStatus();
}

absl::StatusOr<const float*> RankDense::Current() {
  if (hybrid_ != nullptr) return hybrid_->weights();
  if (async_ == nullptr) return nullptr;
  const int dim = o_.model->row_dim();
  std::vector<float> rows(async_->keys().size() * dim);
  absl::Status s = o_.ps_dense->Pull(async_->keys(), false, rows.data());
  if (!s.ok()) return s;
  pulled_.resize(async_->size());
  async_->Weights(rows.data(), pulled_.data());
  return pulled_.data();
}

absl::StatusOr<DenseModelState> RankDense::State() {
  DenseModelState state;
  if (hybrid_ != nullptr) return hybrid_->State();
  if (async_ == nullptr) return state;
  absl::StatusOr<const float*> w = Current();
  if (!w.ok()) return w.status();
  state.weights = pulled_;
  return state;
}

absl::Status RankDense::Finish() {
  if (hybrid_ == nullptr) return absl::OkStatus();
  absl::StatusOr<uint64_t> hash = hybrid_->Finish();
  if (!hash.ok()) return hash.status();
  const std::string path =
      absl::StrCat(o_.config->output_dir(), "/dense_hash-", o_.rank, ".txt");
  const std::string line = absl::StrFormat("%016x", *hash);
  std::ofstream out(path);
  out << line << "\n";
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  SAMPAN_LOG(INFO) << "trainer " << o_.rank << ": dense weights hash " << line
                   << " after " << hybrid_->steps() << " steps";
  return absl::OkStatus();
}

absl::StatusOr<std::string> RankDense::SaveForCheckpoint(uint64_t steps) {
  // The coordinator must see the same path.
  const std::string root =
      std::filesystem::absolute(CheckpointRoot(*o_.config)).string();
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  const std::string path = DenseCheckpointFile(root, steps);
  absl::Status s = SaveDenseModel(path, *o_.model, hybrid_->State());
  if (!s.ok()) return s;
  return path;
}

}  // namespace sampan
