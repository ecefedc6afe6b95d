// Validation of a job config: each section's fields, then what the modes
// (`sampan run`, train-local) and features need of each other. Parsing and
// defaults are in config.cc.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/config.h"
#include "common/pass_pattern.h"
#include "google/protobuf/repeated_ptr_field.h"

namespace sampan {
namespace {

namespace pb = google::protobuf;

absl::Status Invalid(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

absl::Status AtLeast(absl::string_view path, uint64_t value, uint64_t min) {
  if (value >= min) return absl::OkStatus();
  return Invalid(path, absl::StrCat("must be at least ", min, ", got ", value));
}

// NaN compares false, so it fails these checks too.
absl::Status Positive(absl::string_view path, double value) {
  if (value > 0) return absl::OkStatus();
  return Invalid(path, absl::StrCat("must be > 0, got ", value));
}

absl::Status NonNegative(absl::string_view path, double value) {
  if (value >= 0) return absl::OkStatus();
  return Invalid(path, absl::StrCat("must be >= 0, got ", value));
}

// Runs checks in order and keeps the first failure.
absl::Status FirstError(std::initializer_list<absl::Status> checks) {
  for (const absl::Status& status : checks) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status ValidateCluster(const ClusterConfig& c) {
  return FirstError({
      AtLeast("cluster.num_pservers", c.num_pservers(), 1),
      AtLeast("cluster.num_trainers", c.num_trainers(), 1),
      AtLeast("cluster.threads_per_trainer", c.threads_per_trainer(), 1),
      AtLeast("cluster.pserver_threads", c.pserver_threads(), 1),
      c.host().empty() ? Invalid("cluster.host", "must not be empty")
                       : absl::OkStatus(),
      c.coordinator_port() > 65535
          ? Invalid("cluster.coordinator_port",
                    absl::StrCat("must be at most 65535, got ",
                                 c.coordinator_port()))
          : absl::OkStatus(),
      Positive("cluster.heartbeat_timeout_seconds",
               c.heartbeat_timeout_seconds()),
      Positive("cluster.rpc_deadline_seconds", c.rpc_deadline_seconds()),
      Positive("cluster.wait_timeout_seconds", c.wait_timeout_seconds()),
  });
}

absl::Status ValidateModel(const ModelConfig& m) {
  if (m.type() == MODEL_UNSPECIFIED) {
    return Invalid("model.type",
                   "must be set (LR, FM, DNN, WIDE_DEEP, DEEPFM, DCN_V2 or "
                   "WORD2VEC)");
  }
  if (m.type() != LR && (m.embedding_dim() < 1 || m.embedding_dim() > 1024)) {
    return Invalid(
        "model.embedding_dim",
        absl::StrCat("must be in [1, 1024] for ", ModelType_Name(m.type()),
                     ", got ", m.embedding_dim()));
  }
  if (m.type() == LR || m.type() == FM || m.type() == WORD2VEC) {
    if (m.mode() == ModelConfig::HYBRID || m.mode() == ModelConfig::SYNC) {
      return Invalid(
          "model.mode",
          absl::StrCat(ModelConfig::Mode_Name(m.mode()),
                       " needs dense weights; ", ModelType_Name(m.type()),
                       " trains ASYNC (leave mode unset)"));
    }
    if (m.field_embedding_dims_size() > 0) {
      return Invalid(
          "model.field_embedding_dims",
          absl::StrCat("deep models only; ", ModelType_Name(m.type()),
                       " uses embedding_dim for every field"));
    }
    return absl::OkStatus();
  }
  for (int i = 0; i < m.field_embedding_dims_size(); ++i) {
    const uint32_t d = m.field_embedding_dims(i);
    if (d > m.embedding_dim() ||
        (m.type() == DEEPFM && d != 0 && d != m.embedding_dim())) {
      return Invalid(
          absl::StrCat("model.field_embedding_dims[", i, "]"),
          m.type() == DEEPFM
              ? absl::StrCat("DEEPFM's FM term needs one width: 0 or ",
                             m.embedding_dim(), ", got ", d)
              : absl::StrCat("must be <= embedding_dim ", m.embedding_dim(),
                             ", got ", d));
    }
  }
  for (int i = 0; i < m.hidden_size(); ++i) {
    if (m.hidden(i) < 1 || m.hidden(i) > 65536) {
      return Invalid(absl::StrCat("model.hidden[", i, "]"),
                     absl::StrCat("must be in [1, 65536], got ", m.hidden(i)));
    }
  }
  if (m.type() == DCN_V2 && m.cross_layers() < 1) {
    return Invalid("model.cross_layers", "must be >= 1 for DCN_V2");
  }
  const OptimizerType t = m.dense_optimizer().type();
  if (t != SGD && t != ADAGRAD && t != ADAM) {
    return Invalid("model.dense_optimizer.type",
                   "must be SGD, ADAGRAD or ADAM");
  }
  return Positive("model.dense_optimizer.learning_rate",
                  m.dense_optimizer().learning_rate());
}

absl::Status ValidateOptimizer(const OptimizerConfig& o) {
  if (o.type() == OPTIMIZER_UNSPECIFIED) {
    return Invalid("table.optimizer.type",
                   "must be set (SGD, ADAGRAD, ADAM or FTRL)");
  }
  // Adagrad divides by sqrt(accumulator); a zero start lets the first step
  // on a rare feature be arbitrarily large (and 0/0 on a zero gradient).
  const auto accumulator = [&o](absl::string_view path, float value) {
    return o.type() == ADAGRAD ? Positive(path, value)
                               : NonNegative(path, value);
  };
  return FirstError({
      Positive("table.optimizer.learning_rate", o.learning_rate()),
      accumulator("table.optimizer.initial_accumulator",
                  o.initial_accumulator()),
      // 0: by model (sparse_table/job_options.h).
      NonNegative("table.optimizer.embedding_initial_accumulator",
                  o.embedding_initial_accumulator()),
      NonNegative("table.optimizer.init_range", o.init_range()),
      NonNegative("table.optimizer.l2", o.l2()),
      NonNegative("table.optimizer.l1", o.l1()),
      o.type() == FTRL ? Positive("table.optimizer.ftrl_beta", o.ftrl_beta())
                       : absl::OkStatus(),
      o.beta1() < 0 || o.beta1() >= 1 || o.beta2() < 0 || o.beta2() >= 1
          ? Invalid("table.optimizer.beta1/beta2", "must be in [0, 1)")
          : absl::OkStatus(),
      o.min_weight() > o.max_weight()
          ? Invalid("table.optimizer.min_weight", "must be <= max_weight")
          : absl::OkStatus(),
  });
}

absl::Status ValidateStorage(const TableConfig& t) {
  const AdmissionConfig& a = t.admission();
  return FirstError({
      t.backend() == BACKEND_UNSPECIFIED
          ? Invalid("table.backend", "must be set (MEMORY or ROCKSDB)")
          : absl::OkStatus(),
      t.durability() == DURABILITY_UNSPECIFIED
          ? Invalid("table.durability", "must be set (WAL or SYNC)")
          : absl::OkStatus(),
      t.row_format() == ROW_FORMAT_UNSPECIFIED
          ? Invalid("table.row_format", "must be set (FP32, FP16 or INT8)")
          : absl::OkStatus(),
      t.rounding() == ROUNDING_UNSPECIFIED
          ? Invalid("table.rounding", "must be set (STOCHASTIC or NEAREST)")
          : absl::OkStatus(),
      t.backend() == ROCKSDB && t.hot_tier_bytes() < (1u << 20)
          ? Invalid("table.hot_tier_bytes", "must be at least 1 MiB")
          : absl::OkStatus(),
      a.probability() <= 0 || a.probability() > 1
          ? Invalid("table.admission.probability", "must be in (0, 1]")
          : absl::OkStatus(),
      a.min_pushes() > 255
          ? Invalid("table.admission.min_pushes", "must be at most 255")
          : absl::OkStatus(),
      t.accessor().show_decay_rate() <= 0 || t.accessor().show_decay_rate() > 1
          ? Invalid("table.accessor.show_decay_rate", "must be in (0, 1]")
          : absl::OkStatus(),
  });
}

absl::Status ValidateTable(const TableConfig& t, const ClusterConfig& c) {
  // Every pserver must own at least one shard.
  if (t.num_shards() < 1 || t.num_shards() < c.num_pservers()) {
    return Invalid("table.num_shards",
                   absl::StrCat("must be at least 1 and at least "
                                "cluster.num_pservers (",
                                c.num_pservers(), "), got ", t.num_shards()));
  }
  return FirstError({ValidateOptimizer(t.optimizer()), ValidateStorage(t)});
}

absl::Status ValidateFiles(absl::string_view path,
                           const pb::RepeatedPtrField<std::string>& files) {
  for (int i = 0; i < files.size(); ++i) {
    if (files[i].empty()) {
      return Invalid(absl::StrCat(path, "[", i, "]"), "must not be empty");
    }
  }
  return absl::OkStatus();
}

// Synthetic data and files are exclusive: files would be silently ignored
// while synthetic.rows > 0, so giving both is an error.
absl::Status ValidateDataSource(const DataConfig& d) {
  const SyntheticDataConfig& s = d.synthetic();
  if (!d.stream().root().empty()) {
    if (s.rows() > 0) {
      return Invalid("data.synthetic.rows",
                     "must be 0 with data.stream.root (the passes are the "
                     "input)");
    }
    if (!d.train_files().empty()) {
      return Invalid("data.train_files",
                     "must be empty with data.stream.root (the passes are "
                     "the input)");
    }
    return ValidateFiles("data.test_files", d.test_files());
  }
  if (s.rows() == 0) {
    if (d.train_files().empty()) {
      return Invalid("data.train_files",
                     "must not be empty when data.synthetic.rows is 0");
    }
    return FirstError({ValidateFiles("data.train_files", d.train_files()),
                       ValidateFiles("data.test_files", d.test_files())});
  }
  if (!d.train_files().empty() || !d.test_files().empty()) {
    return Invalid(
        d.train_files().empty() ? "data.test_files" : "data.train_files",
        "must be empty while data.synthetic.rows > 0 (set "
        "data.synthetic.rows: 0 to train on files)");
  }
  if (!(s.test_fraction() > 0 && s.test_fraction() < 1)) {
    return Invalid("data.synthetic.test_fraction",
                   absl::StrCat("must be in (0, 1), got ", s.test_fraction()));
  }
  return absl::OkStatus();
}

absl::Status ValidateStream(const StreamConfig& s);

absl::Status ValidateData(const DataConfig& d) {
  if (d.format() == FORMAT_UNSPECIFIED) {
    return Invalid("data.format", "must be set (CRITEO_TSV)");
  }
  if (!(d.max_bad_fraction() >= 0 && d.max_bad_fraction() <= 1)) {
    return Invalid(
        "data.max_bad_fraction",
        absl::StrCat("must be in [0, 1], got ", d.max_bad_fraction()));
  }
  if (d.integer_features() >= DataConfig::LOG_DENSE &&
      d.format() != CRITEO_TSV && d.format() != CRITEO_TSV_UNLABELED) {
    return Invalid(
        "data.integer_features",
        absl::StrCat(DataConfig::IntegerFeatures_Name(d.integer_features()),
                     " needs a Criteo format, got ",
                     DataFormat_Name(d.format())));
  }
  if (!(d.holdout_fraction() >= 0 && d.holdout_fraction() < 1)) {
    return Invalid(
        "data.holdout_fraction",
        absl::StrCat("must be in [0, 1), got ", d.holdout_fraction()));
  }
  if (!(d.validation_fraction() >= 0 && d.validation_fraction() < 1)) {
    return Invalid(
        "data.validation_fraction",
        absl::StrCat("must be in [0, 1), got ", d.validation_fraction()));
  }
  // A window is one Batch, whose offsets are 32-bit; past this it would
  // also hold ~4 GB per trainer.
  constexpr uint32_t kMaxWindowRows = 10'000'000;
  if (d.shuffle_buffer_rows() > kMaxWindowRows) {
    return Invalid("data.shuffle_buffer_rows",
                   absl::StrCat("must be at most ", kMaxWindowRows,
                                " (~400 bytes a Criteo row per trainer), got ",
                                d.shuffle_buffer_rows()));
  }
  return FirstError({
      AtLeast("data.batch_size", d.batch_size(), 1),
      AtLeast("data.epochs", d.epochs(), 1),
      ValidateDataSource(d),
      ValidateStream(d.stream()),
  });
}

absl::Status ValidatePassName(absl::string_view field, const std::string& name,
                              const PassPattern& pattern,
                              const std::string& text) {
  if (name.empty() || pattern.Match(name).has_value()) return absl::OkStatus();
  return Invalid(field, absl::StrCat("\"", name, "\" does not match pattern \"",
                                     text, "\""));
}

absl::Status ValidateStream(const StreamConfig& s) {
  if (s.root().empty()) return absl::OkStatus();
  absl::StatusOr<PassPattern> pattern = PassPattern::Compile(s.pattern());
  if (!pattern.ok()) {
    return Invalid("data.stream.pattern", pattern.status().message());
  }
  const bool marker_ok = !s.done_marker().empty() &&
                         s.done_marker().find('/') == std::string::npos;
  absl::Status order = absl::OkStatus();
  if (!s.start_pass().empty() && !s.end_pass().empty() &&
      pattern->Match(s.start_pass()) && pattern->Match(s.end_pass()) &&
      pattern->Match(s.end_pass())->time <
          pattern->Match(s.start_pass())->time) {
    order =
        Invalid("data.stream.end_pass",
                absl::StrCat("\"", s.end_pass(), "\" is before start_pass \"",
                             s.start_pass(), "\""));
  }
  return FirstError({
      marker_ok ? absl::OkStatus()
                : Invalid("data.stream.done_marker",
                          "must be a file name (no \"/\"), e.g. _SUCCESS"),
      ValidatePassName("data.stream.start_pass", s.start_pass(), *pattern,
                       s.pattern()),
      ValidatePassName("data.stream.end_pass", s.end_pass(), *pattern,
                       s.pattern()),
      order,
      Positive("data.stream.poll_seconds", s.poll_seconds()),
      NonNegative("data.stream.idle_stop_seconds", s.idle_stop_seconds()),
      s.progressive_fraction() >= 0 && s.progressive_fraction() <= 1
          ? absl::OkStatus()
          : Invalid("data.stream.progressive_fraction",
                    absl::StrCat("must be in [0, 1], got ",
                                 s.progressive_fraction())),
      AtLeast("data.stream.keep_bases", s.keep_bases(), 1),
  });
}

// Kubernetes quantities: a decimal number with an optional SI or binary
// suffix ("500m", "2", "1.5Gi"); the API server rejects anything else.
bool IsQuantity(const std::string& q) {
  static const char* const kSuffixes[] = {"",   "m",  "k",  "M",  "G",  "T",
                                          "Ki", "Mi", "Gi", "Ti", "Pi", "E"};
  size_t digits = 0;
  while (digits < q.size() &&
         (absl::ascii_isdigit(static_cast<unsigned char>(q[digits])) ||
          q[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return false;
  for (const char* suffix : kSuffixes) {
    if (q.substr(digits) == suffix) return true;
  }
  return false;
}

absl::Status ValidateResources(absl::string_view path,
                               const ResourceConfig& r) {
  const std::pair<const char*, const std::string*> fields[] = {
      {"cpu_request", &r.cpu_request()},
      {"memory_request", &r.memory_request()},
      {"cpu_limit", &r.cpu_limit()},
      {"memory_limit", &r.memory_limit()}};
  for (const auto& [name, value] : fields) {
    if (!value->empty() && !IsQuantity(*value)) {
      return Invalid(absl::StrCat(path, ".", name),
                     absl::StrCat("not a Kubernetes quantity: \"", *value,
                                  "\" (e.g. \"500m\", \"2\", \"4Gi\")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateKubernetes(const KubernetesConfig& k) {
  const std::string& policy = k.image_pull_policy();
  return FirstError({
      k.image().empty() ? Invalid("kubernetes.image", "must not be empty")
                        : absl::OkStatus(),
      policy != "Always" && policy != "IfNotPresent" && policy != "Never"
          ? Invalid("kubernetes.image_pull_policy",
                    "must be Always, IfNotPresent or Never")
          : absl::OkStatus(),
      ValidateResources("kubernetes.coordinator", k.coordinator()),
      ValidateResources("kubernetes.pserver", k.pserver()),
      ValidateResources("kubernetes.trainer", k.trainer()),
      ValidateResources("kubernetes.serving", k.serving()),
      ValidateResources("kubernetes.lookup", k.lookup()),
      IsQuantity(k.lookup_storage())
          ? absl::OkStatus()
          : Invalid("kubernetes.lookup_storage", "not a Kubernetes quantity"),
      AtLeast("kubernetes.serving_replicas", k.serving_replicas(), 1),
      IsQuantity(k.pserver_storage())
          ? absl::OkStatus()
          : Invalid("kubernetes.pserver_storage", "not a Kubernetes quantity"),
      k.checkpoint_storage().empty() || IsQuantity(k.checkpoint_storage())
          ? absl::OkStatus()
          : Invalid("kubernetes.checkpoint_storage",
                    "not a Kubernetes quantity"),
      k.grpc_port() < 1 || k.grpc_port() > 65535 || k.metrics_port() < 1 ||
              k.metrics_port() > 65535 || k.grpc_port() == k.metrics_port()
          ? Invalid("kubernetes.grpc_port/metrics_port",
                    "must be two different ports in [1, 65535]")
          : absl::OkStatus(),
      absl::StartsWith(k.data_mount_path(), "/")
          ? absl::OkStatus()
          : Invalid("kubernetes.data_mount_path", "must be an absolute path"),
  });
}

}  // namespace

// Checkpoints snapshot the pservers' RocksDB databases; a memory table has
// nothing to snapshot from outside the process.
bool TakesCheckpoints(const JobConfig& config) {
  const CheckpointConfig& c = config.checkpoint();
  return c.every_steps() > 0 || c.every_seconds() > 0 || c.every_passes() > 0;
}

absl::Status ValidateCheckpoint(const JobConfig& config) {
  const CheckpointConfig& c = config.checkpoint();
  const bool on = TakesCheckpoints(config);
  return FirstError({
      NonNegative("checkpoint.every_seconds", c.every_seconds()),
      AtLeast("checkpoint.keep", c.keep(), 1),
      Positive("checkpoint.timeout_seconds", c.timeout_seconds()),
      c.every_passes() > 0 && config.data().stream().root().empty()
          ? Invalid("checkpoint.every_passes",
                    "needs data.stream (a batch job is one pass: use "
                    "every_steps or every_seconds)")
          : absl::OkStatus(),
      on && config.table().backend() != ROCKSDB
          ? Invalid("checkpoint",
                    "needs table.backend: ROCKSDB (a memory table cannot "
                    "be snapshotted)")
          : absl::OkStatus(),
  });
}

// BY_FILE gives each trainer whole files: every trainer needs one.
absl::Status ValidateSplit(const JobConfig& config) {
  const DataConfig& d = config.data();
  // A stream's passes have as many files as they have.
  if (d.split() != DataConfig::BY_FILE || !d.stream().root().empty()) {
    return absl::OkStatus();
  }
  const uint32_t trainers = config.cluster().num_trainers();
  const bool synthetic = d.synthetic().rows() > 0;
  const int files = synthetic ? 1 : d.train_files_size();
  if (uint32_t(files) >= trainers) return absl::OkStatus();
  return Invalid("data.split",
                 absl::StrCat("BY_FILE needs at least cluster.num_trainers (",
                              trainers, ") training files, got ", files,
                              synthetic ? " (synthetic data is one file)" : "",
                              "; use BY_LINE_RANGE"));
}

absl::Status ValidateShardAddresses(const ServingConfig& s) {
  if (s.shard_addresses_size() != 0 &&
      uint32_t(s.shard_addresses_size()) != std::max(1u, s.shards())) {
    return Invalid(
        "serving.shard_addresses",
        absl::StrCat("expected one per shard (serving.shards: ", s.shards(),
                     "), got ", s.shard_addresses_size()));
  }
  for (int i = 0; i < s.shard_addresses_size(); ++i) {
    const std::string& a = s.shard_addresses(i);
    const size_t colon = a.rfind(':');
    int port = 0;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(a.substr(colon + 1), &port) || port < 1 ||
        port > 65535) {
      return Invalid(absl::StrCat("serving.shard_addresses[", i, "]"),
                     absl::StrCat("expected host:port, got \"", a, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateServing(const JobConfig& config) {
  const ServingConfig& s = config.serving();
  const TableConfig& table = config.table();
  return FirstError({
      s.shards() > std::max(1u, table.num_shards())
          ? Invalid("serving.shards",
                    absl::StrCat("must be at most table.num_shards (",
                                 table.num_shards(), "), got ", s.shards()))
          : absl::OkStatus(),
      ValidateShardAddresses(s),
      Positive("serving.lookup_deadline_seconds", s.lookup_deadline_seconds()),
      s.enabled() && config.data().stream().root().empty()
          ? Invalid("serving.enabled",
                    "needs data.stream: a batch job publishes no model "
                    "versions to serve while it runs (serve its exported "
                    "model with `sampan serve` after it ends)")
          : absl::OkStatus(),
      s.port() > 65535
          ? Invalid("serving.port",
                    absl::StrCat("must be at most 65535, got ", s.port()))
          : absl::OkStatus(),
      Positive("serving.poll_seconds", s.poll_seconds()),
      AtLeast("serving.max_examples_per_request", s.max_examples_per_request(),
              1),
      AtLeast("serving.max_line_bytes", s.max_line_bytes(), 1),
      s.scoring_threads() > 256
          ? Invalid(
                "serving.scoring_threads",
                absl::StrCat("must be at most 256, got ", s.scoring_threads()))
          : absl::OkStatus(),
      s.store_dir().empty()
          ? absl::OkStatus()
          : AtLeast("serving.memory_budget_mb", s.memory_budget_mb(), 4),
  });
}

// model.type WORD2VEC and data.format TEXT go together; what word vectors
// cannot do is refused here, before anything starts.
absl::Status ValidateWord2Vec(const JobConfig& config) {
  const ModelConfig& m = config.model();
  const DataConfig& d = config.data();
  const bool words = m.type() == WORD2VEC;
  if (words != (d.format() == TEXT)) {
    return words ? Invalid("data.format",
                           absl::StrCat("WORD2VEC trains on TEXT, got ",
                                        DataFormat_Name(d.format())))
                 : Invalid("data.format",
                           absl::StrCat("TEXT is for model.type WORD2VEC, "
                                        "got ",
                                        ModelType_Name(m.type())));
  }
  if (!words) return absl::OkStatus();
  const Word2VecConfig& w = m.word2vec();
  const OptimizerConfig& o = config.table().optimizer();
  const auto not_with = [](absl::string_view path, bool set,
                           absl::string_view why) {
    return set ? Invalid(path, absl::StrCat("not with WORD2VEC: ", why))
               : absl::OkStatus();
  };
  return FirstError({
      w.window() < 1 || w.window() > 100
          ? Invalid("model.word2vec.window",
                    absl::StrCat("must be in [1, 100], got ", w.window()))
          : absl::OkStatus(),
      w.negatives() < 1 || w.negatives() > 100
          ? Invalid("model.word2vec.negatives",
                    absl::StrCat("must be in [1, 100], got ", w.negatives()))
          : absl::OkStatus(),
      AtLeast("model.word2vec.min_count", w.min_count(), 1),
      !(w.subsample() >= 0 && w.subsample() < 1)
          ? Invalid("model.word2vec.subsample",
                    absl::StrCat("must be in [0, 1), got ", w.subsample()))
          : absl::OkStatus(),
      o.type() != SGD || o.l2() != 0
          ? Invalid("table.optimizer",
                    absl::StrCat("WORD2VEC needs type SGD and l2 0 (trainers "
                                 "push each row's change, which SGD adds "
                                 "as is), got ",
                                 OptimizerType_Name(o.type()), " l2 ", o.l2()))
          : absl::OkStatus(),
      not_with("data.synthetic.rows", d.synthetic().rows() > 0,
               "synthetic rows are CTR examples; set it to 0 and give "
               "train_files"),
      not_with("data.test_files", d.test_files_size() > 0,
               "word vectors are scored by model.word2vec.similarity_file"),
      not_with("data.holdout_fraction", d.holdout_fraction() > 0,
               "word vectors are scored by model.word2vec.similarity_file"),
      not_with("data.validation_fraction", d.validation_fraction() > 0,
               "there is no AUC to stop early on"),
      not_with("data.min_feature_count", d.min_feature_count() > 1,
               "use model.word2vec.min_count"),
      not_with("data.stream", !d.stream().root().empty(),
               "continuous training of word vectors is not built yet"),
      not_with("serving.enabled", config.serving().enabled(),
               "serving answers CTR predictions; word vectors are written "
               "to <output_dir>/vectors.vec"),
      !(o.init_range() > 0)
          ? Invalid("table.optimizer.init_range",
                    "must be > 0 for WORD2VEC: vectors that start at 0 "
                    "never move")
          : absl::OkStatus(),
      not_with("table.accessor.embedx_threshold",
               config.table().accessor().embedx_threshold() > 0,
               "every word's vectors exist from its first step"),
      not_with("table.optimizer.min_weight",
               o.min_weight() != 0 || o.max_weight() != 0,
               "clamping would change the pushed steps"),
      not_with("table.admission.min_pushes",
               config.table().admission().min_pushes() > 1 ||
                   config.table().admission().probability() < 1,
               "every vocabulary word has its rows"),
  });
}

absl::Status ValidateJobConfig(const JobConfig& config) {
  return FirstError({
      config.name().empty() ? Invalid("name", "must not be empty")
                            : absl::OkStatus(),
      ValidateCluster(config.cluster()),
      ValidateModel(config.model()),
      ValidateTable(config.table(), config.cluster()),
      ValidateData(config.data()),
      ValidateSplit(config),
      config.output_dir().empty() ? Invalid("output_dir", "must not be empty")
                                  : absl::OkStatus(),
      Positive("progress_interval_seconds", config.progress_interval_seconds()),
      ValidateKubernetes(config.kubernetes()),
      ValidateCheckpoint(config),
      ValidateServing(config),
      ValidateWord2Vec(config),
  });
}

// What a stream job cannot do yet, or cannot mean.
absl::Status ValidateStreamForRun(const JobConfig& config) {
  const DataConfig& d = config.data();
  if (d.stream().root().empty()) return absl::OkStatus();
  const CheckpointConfig& c = config.checkpoint();
  return FirstError({
      d.epochs() > 1 ? Invalid("data.epochs",
                               "must be 1 with data.stream: every pass is "
                               "trained once")
                     : absl::OkStatus(),
      d.min_feature_count() > 1
          ? Invalid("data.min_feature_count",
                    "needs every training row up front; with data.stream "
                    "use table.admission.min_pushes")
          : absl::OkStatus(),
      d.holdout_fraction() > 0
          ? Invalid("data.holdout_fraction",
                    "a stream is scored pass by pass before training "
                    "(data.stream.progressive_fraction); give test_files "
                    "for a fixed test set")
          : absl::OkStatus(),
      d.shuffle_buffer_rows() > 0
          ? Invalid("data.shuffle_buffer_rows",
                    "not with data.stream yet (passes are read in order)")
          : absl::OkStatus(),
      d.validation_fraction() > 0
          ? Invalid("data.validation_fraction",
                    "a stream is scored pass by pass before training "
                    "(data.stream.progressive_fraction); every pass is "
                    "trained once, so there is no epoch to stop after")
          : absl::OkStatus(),
      c.every_steps() > 0 || c.every_seconds() > 0
          ? Invalid(c.every_steps() > 0 ? "checkpoint.every_steps"
                                        : "checkpoint.every_seconds",
                    "not with data.stream: a stream job checkpoints at pass "
                    "ends (checkpoint.every_passes)")
          : absl::OkStatus(),
  });
}

absl::Status ValidateForRun(const JobConfig& config) {
  return ValidateStreamForRun(config);
}

absl::Status ValidateForTrainLocal(const JobConfig& config) {
  if (!config.data().stream().root().empty()) {
    return Invalid("data.stream",
                   "continuous training runs under `sampan run` only for "
                   "now (`sampan train-local` trains data.train_files)");
  }
  return absl::OkStatus();
}

}  // namespace sampan
