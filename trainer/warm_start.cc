#include "trainer/warm_start.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/hash.h"
#include "common/log.h"
#include "coordinator/checkpoint_store.h"
#include "sparse_table/job_options.h"
#include "trainer/async_dense.h"
#include "trainer/local_job.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

absl::Status Named(const JobConfig& config, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("init_model ", config.init_model(),
                                             ": ", s.message()));
}

template <typename T>
std::string Join(const T& values) {
  return absl::StrCat("[", absl::StrJoin(values, ", "), "]");
}

// What makes two jobs' models the same model: the field and both values of
// each difference.
std::vector<std::string> ShapeDifferences(const JobConfig& model,
                                          const JobConfig& job) {
  std::vector<std::string> d;
  auto differ = [&d](const char* field, const std::string& was,
                     const std::string& is) {
    if (was != is) {
      d.push_back(absl::StrCat(field, " is ", was, " there, ", is, " here"));
    }
  };
  const ModelConfig& a = model.model();
  const ModelConfig& b = job.model();
  differ("model.type", ModelType_Name(a.type()), ModelType_Name(b.type()));
  differ("model.embedding_dim", absl::StrCat(a.embedding_dim()),
         absl::StrCat(b.embedding_dim()));
  differ("model.field_embedding_dims", Join(a.field_embedding_dims()),
         Join(b.field_embedding_dims()));
  differ("model.hidden", Join(a.hidden()), Join(b.hidden()));
  differ("model.cross_layers", absl::StrCat(a.cross_layers()),
         absl::StrCat(b.cross_layers()));
  differ("model.num_fields", absl::StrCat(a.num_fields()),
         absl::StrCat(b.num_fields()));
  const DataConfig& x = model.data();
  const DataConfig& y = job.data();
  differ("data.format", DataFormat_Name(x.format()),
         DataFormat_Name(y.format()));
  differ("data.integer_features",
         DataConfig::IntegerFeatures_Name(x.integer_features()),
         DataConfig::IntegerFeatures_Name(y.integer_features()));
  differ("data.empty_field_signs", x.empty_field_signs() ? "true" : "false",
         y.empty_field_signs() ? "true" : "false");
  differ("data.min_feature_count", absl::StrCat(x.min_feature_count()),
         absl::StrCat(y.min_feature_count()));
  return d;
}

absl::Status AnotherModel(const JobConfig& config,
                          const std::vector<std::string>& d,
                          const char* what = "another model than this job's") {
  return Named(config, absl::InvalidArgumentError(
                           absl::StrCat(what, ": ", absl::StrJoin(d, "; "))));
}

// Whether the job has dense weights that a checkpoint carries.
bool HasDenseWeights(const JobConfig& job) {
  return HasDenseTable(job) || IsDeepModel(job.model().type());
}

// Beyond the model's shape, what a checkpoint's pserver snapshots and dense
// state need to be usable as they are: the same tables (shards, pservers,
// stored row layout, backend) and the same home for the dense weights.
std::vector<std::string> CheckpointDifferences(const JobConfig& was,
                                               const JobConfig& job) {
  std::vector<std::string> d = ShapeDifferences(was, job);
  auto differ = [&d](const char* field, const std::string& there,
                     const std::string& here, const char* why) {
    if (there != here) {
      d.push_back(absl::StrCat(field, " is ", there, " there, ", here,
                               " here (", why, ")"));
    }
  };
  differ("cluster.num_pservers", absl::StrCat(was.cluster().num_pservers()),
         absl::StrCat(job.cluster().num_pservers()),
         "each pserver's snapshot holds the shards it owned");
  if (HasDenseTable(job)) {
    auto seed = [](const JobConfig& c) {
      return absl::StrCat(c.model().seed() > 0 ? c.model().seed() : 1);
    };
    differ("model.seed", seed(was), seed(job),
           "the dense table's rows are offsets from the seeded initial "
           "weights");
  }
  differ("table.num_shards", absl::StrCat(was.table().num_shards()),
         absl::StrCat(job.table().num_shards()),
         "rows and writer sequences are kept by shard");
  differ("table.backend", TableBackend_Name(was.table().backend()),
         TableBackend_Name(job.table().backend()),
         "a checkpoint holds RocksDB databases; warm start a memory table "
         "from a published version");
  differ("table.optimizer.type",
         OptimizerType_Name(was.table().optimizer().type()),
         OptimizerType_Name(job.table().optimizer().type()),
         "the rows keep that rule's state");
  if (HasDenseWeights(job)) {
    differ("model.mode", HasDenseTable(was) ? "ASYNC" : "HYBRID/SYNC",
           HasDenseTable(job) ? "ASYNC" : "HYBRID/SYNC",
           "dense weights on the pservers or in dense.bin");
    differ("model.dense_optimizer.type",
           OptimizerType_Name(was.model().dense_optimizer().type()),
           OptimizerType_Name(job.model().dense_optimizer().type()),
           "the dense weights keep that rule's state");
  }
  return d;
}

// init_model as a checkpoint: verified (every file against its MANIFEST),
// taken by a job of this shape, with what this job needs in it.
absl::StatusOr<std::string> CheckInitCheckpoint(const JobConfig& config) {
  absl::StatusOr<std::string> dir = ResolveCheckpoint(config.init_model());
  if (!dir.ok()) return Named(config, dir.status());
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(*dir, false);
  if (!m.ok()) return Named(config, m.status());
  absl::StatusOr<JobConfig> was = ReadCheckpointConfig(*dir);
  if (!was.ok()) {
    return Named(config,
                 absl::Status(was.status().code(),
                              absl::StrCat(was.status().message(),
                                           "; warm start from a model version "
                                           "or a newer checkpoint")));
  }
  const std::vector<std::string> d = CheckpointDifferences(*was, config);
  if (!d.empty()) {
    return AnotherModel(config, d,
                        "taken by a job of another model or other tables "
                        "than this one's");
  }
  const bool lockstep_dense = !HasDenseTable(config) && HasDenseWeights(config);
  if (lockstep_dense && !m->has_dense()) {
    return Named(config,
                 absl::DataLossError(absl::StrCat(
                     *dir, " holds no dense.bin for the dense weights")));
  }
  return *dir;
}

}  // namespace

bool InitFromCheckpoint(const JobConfig& config) {
  return !config.init_model().empty() && IsCheckpointPath(config.init_model());
}

absl::StatusOr<std::string> CheckInitModel(const JobConfig& config) {
  if (config.init_model().empty()) return std::string();
  if (InitFromCheckpoint(config)) return CheckInitCheckpoint(config);
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  const std::vector<std::string> d = ShapeDifferences(m->config, config);
  if (!d.empty()) return AnotherModel(config, d);
  return config.init_model();
}

// Whether `key`'s row lives on pserver `index` (common/hash.h).
bool Owns(const JobConfig& config, int index, uint64_t key) {
  return PserverOfShard(ShardOf(key, config.table().num_shards()),
                        config.cluster().num_pservers()) ==
         static_cast<uint32_t>(index);
}

// Appends `row` (row_dim floats) under `key` when pserver `index` owns it.
void KeepOwn(const JobConfig& config, int index, uint64_t key, const float* row,
             int row_dim, std::vector<uint64_t>* keys,
             std::vector<float>* values) {
  if (!Owns(config, index, key)) return;
  keys->push_back(key);
  values->insert(values->end(), row, row + row_dim);
}

absl::StatusOr<uint64_t> LoadInitDenseRows(const JobConfig& config, int index,
                                           SparseTable* table) {
  if (config.init_model().empty() || !HasDenseTable(config)) return 0;
  // A checkpoint's dense table is in the snapshot the launcher restored.
  if (InitFromCheckpoint(config)) return 0;
  if (table->Stats().rows > 0) return 0;
  absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(config);
  if (!o.ok()) return o.status();
  const CtrModel model(o->model);
  absl::StatusOr<DenseModelState> dense = LoadInitDense(config, model);
  if (!dense.ok()) return dense.status();
  const AsyncDense layout(model, model.row_dim());
  // The rows hold offsets from the initialisation: Weights(zero rows).
  const int dim = model.row_dim();
  std::vector<float> rows(layout.keys().size() * dim, 0.0f);
  std::vector<float> offsets(layout.size());
  layout.Weights(rows.data(), offsets.data());
  for (size_t i = 0; i < offsets.size(); ++i) {
    offsets[i] = dense->weights[i] - offsets[i];
  }
  layout.GradRows(offsets.data(), 1.0f, rows.data());
  std::vector<uint64_t> keys;
  std::vector<float> values;
  for (size_t i = 0; i < layout.keys().size(); ++i) {
    KeepOwn(config, index, layout.keys()[i], &rows[i * dim], dim, &keys,
            &values);
  }
  if (absl::Status s = table->BulkLoad(keys, values.data()); !s.ok()) {
    return Named(config, s);
  }
  SAMPAN_LOG(INFO) << "pserver " << index << ": warm start: " << keys.size()
                   << " of " << layout.keys().size()
                   << " dense-table rows loaded";
  return keys.size();
}

absl::StatusOr<uint64_t> LoadInitRows(const JobConfig& config, int index,
                                      SparseTable* table) {
  if (config.init_model().empty()) return 0;
  if (InitFromCheckpoint(config)) {
    SAMPAN_LOG(INFO) << "pserver " << index << ": warm start from checkpoint "
                     << config.init_model()
                     << " (its snapshot is this pserver's database)";
    return 0;
  }
  if (table->Stats().rows > 0) {
    SAMPAN_LOG(INFO) << "pserver " << index
                     << ": the table has rows already; init_model "
                     << config.init_model() << " not loaded again";
    return 0;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  const SparseRows& rows = m->sparse;
  if (rows.row_dim != static_cast<int>(table->pull_dim())) {
    return Named(config, absl::InvalidArgumentError(
                             absl::StrCat("rows of ", rows.row_dim,
                                          " floats, the table "
                                          "pulls ",
                                          table->pull_dim())));
  }
  std::vector<uint64_t> keys;
  std::vector<float> values;
  for (const auto& [key, row] : rows.index) {
    KeepOwn(config, index, key, &rows.rows[size_t{row} * rows.row_dim],
            rows.row_dim, &keys, &values);
  }
  const absl::Time read = absl::Now();
  if (absl::Status s = table->BulkLoad(keys, values.data()); !s.ok()) {
    return Named(config, s);
  }
  const double load_s = absl::ToDoubleSeconds(absl::Now() - read);
  SAMPAN_LOG(INFO) << "pserver " << index << ": warm start from "
                   << DescribeModel(*m) << ": " << keys.size() << " of "
                   << rows.index.size() << " rows (its shards) loaded in "
                   << load_s << " s ("
                   << (load_s > 0 ? keys.size() / load_s : 0)
                   << " rows/s), read in "
                   << absl::ToDoubleSeconds(read - start) << " s";
  return keys.size();
}

// A checkpoint's keys: read from its pservers' snapshots (read-only; no
// pserver lists its keys over RPC yet, and the snapshot, unlike the live
// table, is the checkpoint's state exactly).
absl::StatusOr<std::vector<uint64_t>> CheckpointKeys(const JobConfig& config,
                                                     int part, int parts) {
  absl::StatusOr<std::string> dir =
      ResolveCheckpoint(config.init_model(), /*verify=*/false);
  if (!dir.ok()) return Named(config, dir.status());
  // Every pserver it has: a rescaled fleet's may be more or fewer.
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(*dir, false);
  if (!m.ok()) return Named(config, m.status());
  std::vector<uint64_t> keys;
  for (uint32_t i = 0; i < m->num_pservers(); ++i) {
    absl::StatusOr<std::vector<uint64_t>> k =
        SnapshotKeys(absl::StrCat(*dir, "/pserver-", i),
                     TableOptionsFromJob(config, i).table_name, part, parts);
    if (!k.ok()) return Named(config, k.status());
    keys.insert(keys.end(), k->begin(), k->end());
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

absl::StatusOr<std::vector<uint64_t>> InitModelKeys(const JobConfig& config,
                                                    int part, int parts) {
  std::vector<uint64_t> keys;
  if (config.init_model().empty()) return keys;
  if (InitFromCheckpoint(config)) return CheckpointKeys(config, part, parts);
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  for (const auto& entry : m->sparse.index) {
    if (entry.first % parts == static_cast<uint64_t>(part)) {
      keys.push_back(entry.first);
    }
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

absl::StatusOr<DenseModelState> LoadInitDense(const JobConfig& config,
                                              const CtrModel& model) {
  if (InitFromCheckpoint(config)) {
    absl::StatusOr<std::string> dir =
        ResolveCheckpoint(config.init_model(), /*verify=*/false);
    if (!dir.ok()) return Named(config, dir.status());
    absl::StatusOr<DenseModelState> d =
        LoadDenseModel(DenseModelPath(*dir), model);
    if (!d.ok()) return Named(config, d.status());
    return d;
  }
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  absl::StatusOr<DenseModelState> d =
      LoadDenseModel(DenseModelPath(m->dir), model);
  if (!d.ok()) return Named(config, d.status());
  return d;
}

}  // namespace sampan
