#include "trainer/warm_start.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/hash.h"
#include "common/log.h"
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

}  // namespace

absl::Status CheckInitModel(const JobConfig& config) {
  if (config.init_model().empty()) return absl::OkStatus();
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  const std::vector<std::string> d = ShapeDifferences(m->config, config);
  if (!d.empty()) {
    return Named(config, absl::InvalidArgumentError(
                             absl::StrCat("another model than this job's: ",
                                          absl::StrJoin(d, "; "))));
  }
  return absl::OkStatus();
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

absl::StatusOr<std::vector<uint64_t>> InitModelKeys(const JobConfig& config,
                                                    int part, int parts) {
  std::vector<uint64_t> keys;
  if (config.init_model().empty()) return keys;
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
  absl::StatusOr<LoadedModel> m = ReadModel(config.init_model());
  if (!m.ok()) return Named(config, m.status());
  absl::StatusOr<DenseModelState> d =
      LoadDenseModel(DenseModelPath(m->dir), model);
  if (!d.ok()) return Named(config, d.status());
  return d;
}

}  // namespace sampan
