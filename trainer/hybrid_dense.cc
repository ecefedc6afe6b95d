#include "trainer/hybrid_dense.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sampan {

namespace {

constexpr size_t kAlignFloats = 16;  // 64 bytes

// The first kAlignFloats-aligned address at or after `p`.
float* AlignUp(float* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t m = kAlignFloats * sizeof(float);
  return reinterpret_cast<float*>((a + m - 1) / m * m);
}

size_t RoundUp(size_t n) {
  return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
}

}  // namespace

HybridDense::HybridDense(const HybridDenseOptions& options,
                         const CtrModel& model)
    : options_(options),
      n_(model.dense_size()),
      storage_(RoundUp(n_) + RoundUp(n_ + 1) + kAlignFloats),
      weights_(AlignUp(storage_.data())),
      grads_(weights_ + RoundUp(n_)),
      blocks_(model.GradBlocks()),
      reported_(blocks_.size(), 0),
      grad_ready_([this](int block) { BlockReady(block); }),
      optimizer_(DenseOptimizer::Create(options.optimizer, n_)) {}

HybridDense::~HybridDense() = default;

absl::StatusOr<std::unique_ptr<HybridDense>> HybridDense::Create(
    const CtrModel& model, const HybridDenseOptions& options) {
  std::unique_ptr<HybridDense> d(new HybridDense(options, model));
  model.InitDense(d->weights_);
  if (options.initial != nullptr) {
    if (absl::Status s = d->Restore(*options.initial); !s.ok()) return s;
  }
  collective::CommunicatorOptions c;
  c.coordinator_address = options.coordinator_address;
  c.rank = options.rank;
  c.size = options.size;
  c.timeout = options.timeout;
  c.credentials = options.credentials;
  // The dense math runs on the CPU; NCCL would want device buffers.
  c.backend = collective::Backend::kGloo;
  const std::string suffix =
      options.generation > 0 ? absl::StrCat("-g", options.generation) : "";
  for (auto [name, comm] : {std::make_pair("hybrid-grads", &d->grads_comm_),
                            std::make_pair("hybrid-ctl", &d->ctl_comm_)}) {
    c.name = absl::StrCat(name, suffix);
    absl::StatusOr<std::unique_ptr<collective::Communicator>> made =
        collective::NewCommunicator(c);
    if (!made.ok()) return made.status();
    *comm = std::move(*made);
  }
  absl::Status s =
      d->ctl_comm_->Broadcast(d->weights_, d->n_, 0, options.timeout);
  if (!s.ok()) return s;
  if (options.skew_rank == options.rank && d->n_ > 0) {
    d->weights_[0] += 1e-3f;
  }
  collective::DenseAllReducerOptions r;
  r.timeout = options.timeout;
  r.bucket_bytes = options.bucket_bytes;
  // The flag first: it is known when the step begins, so it never holds a
  // bucket back.
  std::vector<absl::Span<float>> buffers = {
      absl::MakeSpan(d->grads_ + d->n_, 1)};
  for (const CtrModel::GradBlock& b : d->blocks_) {
    buffers.push_back(absl::MakeSpan(d->grads_ + b.offset, b.count));
  }
  d->reducer_ = std::make_unique<collective::DenseAllReducer>(
      d->grads_comm_.get(), std::move(buffers), r);
  return d;
}

void HybridDense::BeginStep(bool trained, size_t batch_size) {
  std::fill(grads_, grads_ + n_ + 1, 0.0f);
  std::fill(reported_.begin(), reported_.end(), 0);
  scale_ = 1.0f / std::max<size_t>(1, batch_size);
  grads_[n_] = trained ? 1.0f : 0.0f;
  reducer_->MarkReady(0);
}

void HybridDense::BlockReady(int block) {
  // Per-example mean on this rank; the allreduce then averages the ranks.
  float* g = grads_ + blocks_[block].offset;
  for (size_t i = 0; i < blocks_[block].count; ++i) g[i] *= scale_;
  reported_[block] = 1;
  reducer_->MarkReady(block + 1);
}

absl::StatusOr<bool> HybridDense::Step() {
  const size_t n = n_;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    if (!reported_[b]) BlockReady(static_cast<int>(b));
  }
  const absl::Time start = absl::Now();
  absl::Status reduced = reducer_->Wait();
  last_wait_ = absl::Now() - start;
  if (!reduced.ok()) return reduced;
  // The flag's average is 1 only when every rank trained; with size not a
  // power of two it may be a rounding below 1, hence the half-rank margin.
  if (grads_[n] < 1.0f - 0.5f / options_.size) return false;
  optimizer_->Apply(weights_, grads_);
  ++steps_;
  if (options_.check_every > 0 && steps_ % options_.check_every == 0) {
    if (absl::Status s = CheckHash(); !s.ok()) return s;
  }
  return true;
}

DenseModelState HybridDense::State() const {
  DenseModelState state;
  state.weights.assign(weights_, weights_ + n_);
  state.optimizer = optimizer_->State();
  return state;
}

absl::Status HybridDense::Restore(const DenseModelState& state) {
  if (state.weights.size() != n_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dense state has ", state.weights.size(), " weights, the model ", n_));
  }
  if (absl::Status s = optimizer_->Restore(state.optimizer); !s.ok()) {
    return s;
  }
  std::copy(state.weights.begin(), state.weights.end(), weights_);
  steps_ = state.optimizer.steps;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> HybridDense::Finish() {
  if (absl::Status s = CheckHash(); !s.ok()) return s;
  return Hash();
}

uint64_t HybridDense::Hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(weights_);
  for (size_t i = 0; i < n_ * sizeof(float); ++i) {
    h = (h ^ p[i]) * 0x100000001b3ull;
  }
  return h;
}

absl::Status HybridDense::CheckHash() {
  const uint64_t mine = Hash();
  // Rank 0's hash as four 16-bit pieces: floats hold them exactly.
  float root[4];
  for (int i = 0; i < 4; ++i) root[i] = float((mine >> (16 * i)) & 0xffff);
  absl::Status s = ctl_comm_->Broadcast(root, 4, 0, options_.timeout);
  if (!s.ok()) return s;
  uint64_t theirs = 0;
  for (int i = 0; i < 4; ++i) theirs |= uint64_t(root[i]) << (16 * i);
  // Every rank learns of any mismatch, so all fail together.
  float differ = theirs != mine ? 1.0f : 0.0f;
  s = ctl_comm_->AllReduce(&differ, 1, collective::ReduceOp::kSum,
                           options_.timeout);
  if (!s.ok()) return s;
  if (differ == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat(
      "dense weights differ across ranks after step %d: rank %d hash %016x, "
      "rank 0 hash %016x (%d rank(s) differ from rank 0)",
      steps_, options_.rank, mine, theirs, int(differ)));
}

}  // namespace sampan
