#include "trainer/local_job.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sparse_table/job_options.h"
#include "trainer/model_export.h"
#include "trainer/report.h"
#include "trainer/word_job.h"

namespace sampan {
namespace {

CtrKind KindOf(ModelType t) {
  switch (t) {
    case LR:
      return CtrKind::kLr;
    case FM:
    case WORD2VEC:  // rows [w, v] as FM's; no dense weights
      return CtrKind::kFm;
    case DNN:
      return CtrKind::kDnn;
    case WIDE_DEEP:
      return CtrKind::kWideDeep;
    case DCN_V2:
      return CtrKind::kDcnV2;
    default:
      return CtrKind::kDeepFm;
  }
}

DenseRule RuleOf(OptimizerType t) {
  if (t == SGD) return DenseRule::kSgd;
  if (t == ADAGRAD) return DenseRule::kAdagrad;
  return DenseRule::kAdam;
}

// Moves the last data.validation_fraction of `train`'s examples into the
// returned set (empty when the fraction is 0).
absl::StatusOr<Dataset> CarveValidation(const JobConfig& c, Dataset* train) {
  Dataset v;
  v.dense_dim = train->dense_dim;
  const double f = c.data().validation_fraction();
  if (f <= 0) return v;
  if (f >= 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.validation_fraction must be in [0, 1), got ", f));
  }
  const size_t keep = train->size() - size_t(f * train->size());
  std::vector<uint32_t> index(train->size() - keep);
  for (size_t i = 0; i < index.size(); ++i) index[i] = uint32_t(keep + i);
  Batch b;
  train->Gather(index.data(), index.size(), &b);
  v.labels = b.labels;
  v.offsets = b.offsets;
  v.signs = b.signs;
  v.slots = b.slots;
  v.dense = b.dense;
  const uint32_t end = train->offsets[keep];
  train->labels.resize(keep);
  train->offsets.resize(keep + 1);
  train->signs.resize(end);
  train->slots.resize(end);
  train->dense.resize(keep * size_t(train->dense_dim));
  return v;
}

}  // namespace

absl::StatusOr<LocalTrainOptions> LocalOptionsFromJob(const JobConfig& c) {
  LocalTrainOptions o;
  o.model.kind = KindOf(c.model().type());
  const ParseOptions parse = ParseOptionsFromJob(c);
  const int fields = FieldsOf(parse.format);
  o.model.fields = c.model().num_fields() > 0 ? c.model().num_fields() : fields;
  if (o.model.fields < 1) {
    return absl::InvalidArgumentError(
        "model.num_fields must be set for this data format");
  }
  o.model.embedding_dim = c.model().embedding_dim();
  o.model.hidden.assign(c.model().hidden().begin(), c.model().hidden().end());
  o.model.cross_layers = c.model().cross_layers();
  o.model.seed = c.model().seed() > 0 ? c.model().seed() : 1;
  o.model.field_dims.assign(c.model().field_embedding_dims().begin(),
                            c.model().field_embedding_dims().end());
  if (int(o.model.field_dims.size()) > o.model.fields) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.field_embedding_dims has ", o.model.field_dims.size(),
        " entries, the model has ", o.model.fields, " fields"));
  }
  o.model.dense_inputs = DenseDimOf(parse);
  // The pservers' mapping (one pserver's table); embedding_dim is the
  // model's (TrainLocal sets it).
  o.table = TableOptionsFromJob(c, 0);
  const OptimizerConfig& d = c.model().dense_optimizer();
  o.dense.rule = RuleOf(d.type());
  o.dense.learning_rate = d.learning_rate();
  o.dense.initial_accumulator = d.initial_accumulator();
  o.dense.l2 = d.l2();
  o.threads = c.cluster().threads_per_trainer();
  // As `sampan run` trains a rank: deep models in lockstep but in ASYNC
  // (LR and FM keep their few dense weights Hogwild, as ASYNC does).
  o.lockstep_dense = c.model().mode() != ModelConfig::ASYNC &&
                     c.model().type() != LR && c.model().type() != FM;
  o.batch_size = c.data().batch_size();
  o.epochs = c.data().epochs();
  o.shuffle = c.data().shuffle();
  return o;
}

absl::Status TrainLocalJob(const JobConfig& c, int curve_points) {
  if (IsWordJob(c)) return TrainWordsLocal(c);
  absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(c);
  if (!o.ok()) return o.status();
  if (c.data().train_files_size() == 0) {
    return absl::InvalidArgumentError("train-local: data.train_files is empty");
  }
  LoadOptions load = LoadOptionsFromJob(c);
  const bool holdout = c.data().test_files_size() == 0;
  if (holdout) load.end_fraction = 1 - c.data().holdout_fraction();
  absl::StatusOr<Dataset> train = LoadDataset(c.data().train_files(0), load);
  if (!train.ok()) return train.status();
  if (holdout) {
    load.begin_fraction = load.end_fraction;
    load.end_fraction = 1;
  }
  absl::StatusOr<Dataset> test = LoadDataset(
      holdout ? c.data().train_files(0) : c.data().test_files(0), load);
  if (!test.ok()) return test.status();
  absl::StatusOr<Dataset> validation = CarveValidation(c, &*train);
  if (!validation.ok()) return validation.status();
  if (validation->size() > 0) o->validation = &*validation;
  if (c.data().min_feature_count() > 1) {
    MergeRareSigns(c.data().min_feature_count(), &*train,
                   {&*test, &*validation});
  }
  o->eval_every =
      curve_points > 0
          ? std::max<uint64_t>(1, train->size() * o->epochs / curve_points)
          : 0;
  o->export_dir = ModelDir(c);
  absl::StatusOr<LocalTrainResult> r =
      TrainLocal(*train, test->size() > 0 ? &*test : nullptr, *o);
  if (!r.ok()) return r.status();
  ModelManifest manifest;
  manifest.min_feature_count =
      c.data().min_feature_count() > 1 ? c.data().min_feature_count() : 0;
  if (absl::Status s = FinishModelDir(o->export_dir, c, manifest); !s.ok()) {
    return s;
  }
  const std::string line = absl::StrFormat(
      "test AUC %.4f  logloss %.4f  COPC %.3f  on %d held-out rows; trained "
      "%d examples at %.0f examples/s",
      r->test.auc, r->test.logloss, r->test.copc, r->test.rows, r->examples,
      r->examples_per_second);
  std::printf("%s\n", line.c_str());
  if (absl::Status s =
          WriteResultFile(absl::StrCat(c.output_dir(), "/result.txt"), r->test,
                          r->examples_per_second);
      !s.ok()) {
    return s;
  }
  const std::string report = absl::StrCat(c.output_dir(), "/report.html");
  std::printf("model: %s\nreport: %s\n", o->export_dir.c_str(), report.c_str());
  return WriteReport(report, absl::StrCat(c.name(), ": train-local"),
                     {{"trainer 0", r->curve}});
}

}  // namespace sampan
