// PassPublisher: what a data.stream job does after every pass, once each
// rank's pushes of the pass are acknowledged: merge the pass's progressive
// validation, run the table lifecycle at a base, and publish model version
// <pass index + 1> under <output_dir>/versions (trainer/model_version.h).
//
//   every rank:  barrier "pass-<i>-trained"  (no push of the pass in flight)
//   rank 0:      base only: Shrink on every pserver (decay show/click, age
//                rows a day, delete by table.accessor), then barrier
//                "pass-<i>-shrunk"
//   every rank:  writes its sparse part into the version's staging dir:
//                delta: the rows of the keys it pushed in the pass; base:
//                those and its share (key % T) of every key of the previous
//                version's chain, rows that read all zeros (deleted, never
//                admitted) left out. Rank 0 also pulls the dense weights.
//   every rank:  barrier "pass-<i>-exported"; the others go on training
//   rank 0:      dense.bin, VERSION, rename, LATEST (PublishVersion); the
//                pass's line in <output_dir>/passes.tsv
//
// Training waits from the first barrier to the second: the export reads the
// rows the pass left, so no push of the next pass may change them before.
// A delta holds no deletions: rows are deleted only by the shrink before a
// base, and a base is the whole table after it.
//
// The first pass of the job, and the first of each day (or every
// data.stream.base_every_passes passes), publish a base; the others deltas.
//
// Thread safety: one thread per rank (the trainer's) calls it.
#ifndef SAMPAN_TRAINER_PASS_PUBLISHER_H_
#define SAMPAN_TRAINER_PASS_PUBLISHER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"
#include "trainer/client/ps_client.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/model_io.h"

namespace sampan {

struct PassPublisherOptions {
  const JobConfig* config = nullptr;
  int rank = 0;
  CoordinatorClient* coordinator = nullptr;
  PsClient* ps = nullptr;  // the sparse table's
  const CtrModel* model = nullptr;
  // The trainers' collective generation: barriers and keys are its own.
  uint64_t generation = 0;
};

class PassPublisher {
 public:
  explicit PassPublisher(const PassPublisherOptions& options);

  // A stream resumed from a checkpoint taken after pass `last_pass` (index
  // next_index - 1): the versions published up to it tell which base the
  // next delta builds on; rank 0 drops passes.tsv's lines of later passes
  // (they are trained and published again).
  absl::Status Resume(uint64_t next_index, const std::string& last_pass);

  // Before `pass` is trained: rank 0 empties the version's staging dir (the
  // others write into it only after the first barrier).
  absl::Status BeginPass(const coord::StreamPass& pass);

  // This rank's progressive validation of `pass`, for rank 0 to merge;
  // returns once every rank has scored the pass (barrier "pass-<i>-scored"),
  // so that no rank trains on it while another still scores it.
  absl::Status PutScore(const coord::StreamPass& pass,
                        const coord::PassScore& score);

  // After this rank's pushes of `pass` are acknowledged. `touched`: the
  // keys it pushed. `dense` (rank 0; called while no push is in flight):
  // the dense weights to publish. Rank 0 returns the pass's figures, the
  // others an empty result.
  absl::StatusOr<coord::PassResult> EndPass(
      const coord::StreamPass& pass, std::vector<uint64_t> touched,
      const std::function<absl::StatusOr<DenseModelState>()>& dense);

  // Rank 0, at the end: result.txt's stream lines (passes, the mean and the
  // last pass's progressive figures, the last version), from passes.tsv;
  // appended to `path` or replacing it.
  absl::Status WriteResult(const std::string& path, bool append) const;

 private:
  bool IsBase(const coord::StreamPass& pass) const;
  absl::Status Barrier(const coord::StreamPass& pass, const char* what);
  // Pulls `keys` (no row created) and writes those that are not all zeros
  // as this rank's part of the staging dir.
  absl::Status WritePart(const std::string& dir, std::vector<uint64_t> keys);
  absl::StatusOr<coord::PassResult> Publish(const coord::StreamPass& pass,
                                            bool base, uint64_t evicted,
                                            double stall_seconds,
                                            const DenseModelState& dense);
  absl::Status AppendPassLine(const coord::PassResult& r);
  std::string PassesPath() const;

  const PassPublisherOptions o_;
  const std::string root_;
  const int trainers_;
  std::string prev_day_;
  uint64_t base_version_ = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_PASS_PUBLISHER_H_
