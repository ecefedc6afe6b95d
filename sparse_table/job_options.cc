#include "sparse_table/job_options.h"

#include <cfloat>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

OptimizerRule RuleOf(OptimizerType t) {
  switch (t) {
    case SGD:
      return OptimizerRule::kSgd;
    case ADAM:
      return OptimizerRule::kAdam;
    case FTRL:
      return OptimizerRule::kFtrl;
    default:
      return OptimizerRule::kAdagrad;
  }
}

void MapOptimizer(const OptimizerConfig& c, TableOptions* o) {
  o->rule = RuleOf(c.type());
  o->learning_rate = c.learning_rate();
  o->initial_accumulator = c.initial_accumulator();
  o->embedding_initial_accumulator = c.embedding_initial_accumulator();
  o->init_range = c.init_range();
  o->l2 = c.l2();
  o->l1 = c.l1();
  o->ftrl_beta = c.ftrl_beta();
  o->beta1 = c.beta1();
  o->beta2 = c.beta2();
  o->epsilon = c.epsilon();
  if (c.min_weight() != 0 || c.max_weight() != 0) {
    o->min_weight = c.min_weight();
    o->max_weight = c.max_weight();
  }
  o->non_finite = c.non_finite() == SKIP_KEY ? NonFinitePolicy::kSkipKey
                                             : NonFinitePolicy::kRejectBatch;
}

}  // namespace

bool HasDenseTable(const JobConfig& job) {
  const ModelType type = job.model().type();
  if (type == WORD2VEC) return false;
  if (type == LR || type == FM) {
    // Hogwild models: their dense inputs' weights are pserver rows.
    return job.data().integer_features() >= DataConfig::LOG_DENSE;
  }
  return job.model().mode() == ModelConfig::ASYNC;
}

TableOptions DenseTableOptionsFromJob(const JobConfig& job,
                                      uint32_t pserver_index) {
  TableOptions o = TableOptionsFromJob(job, pserver_index);
  o.data_dir = absl::StrCat(o.data_dir, "/table-", kDenseTableId);
  // As the trainer's DenseOptimizerOptions: these four fields (one Adagrad
  // start for the whole row), and Adam's usual moment rates
  // (model.dense_optimizer's are not read).
  const OptimizerConfig& d = job.model().dense_optimizer();
  o.rule = RuleOf(d.type());
  o.learning_rate = d.learning_rate();
  o.initial_accumulator = d.initial_accumulator();
  o.embedding_initial_accumulator = d.initial_accumulator();
  o.l2 = d.l2();
  o.l1 = 0;
  o.beta1 = 0.9f;
  o.beta2 = 0.999f;
  o.epsilon = 1e-8f;
  o.init_range = 0;
  // Dense weights are few and dense: nothing to gain from packing them.
  o.row_format = RowFormat::kFp32;
  o.min_weight = -FLT_MAX;
  o.max_weight = FLT_MAX;
  o.embedx_threshold = 0;
  o.admit_after_pushes = 0;
  o.admit_probability = 1;
  o.delete_threshold = 0;
  o.delete_after_unseen_days = UINT32_MAX;
  return o;
}

absl::Status CheckJobTableLayouts(const JobConfig& job) {
  for (uint32_t i = 0;; ++i) {
    const TableOptions o = TableOptionsFromJob(job, i);
    std::error_code ec;
    if (i >= job.cluster().num_pservers() &&
        !std::filesystem::exists(o.data_dir, ec)) {
      return absl::OkStatus();
    }
    if (absl::Status st = CheckTableLayout(o); !st.ok()) return st;
    if (HasDenseTable(job)) {
      if (absl::Status st = CheckTableLayout(DenseTableOptionsFromJob(job, i));
          !st.ok()) {
        return st;
      }
    }
  }
}

TableOptions TableOptionsFromJob(const JobConfig& job, uint32_t pserver_index) {
  const TableConfig& t = job.table();
  TableOptions o;
  o.num_shards = t.num_shards();
  o.embedding_dim = job.model().type() == LR ? 0 : job.model().embedding_dim();
  MapOptimizer(t.optimizer(), &o);
  if (t.optimizer().embedding_initial_accumulator() == 0) {
    // By model: damp v's first steps where a wide part learns beside it; a
    // DNN's embeddings are its only sparse signal, so they start as w does
    // (Criteo, validation slice: DNN 0.7581 vs 0.7487 with 1000 after an
    // epoch; FM 0.7588 vs 0.7453 with 0.01; bench/RESULTS.md 2026-12-02).
    o.embedding_initial_accumulator = job.model().type() == DNN
                                          ? o.initial_accumulator
                                          : kEmbeddingInitialAccumulator;
  }
  o.backend = t.backend() == ROCKSDB ? Backend::kRocksDb : Backend::kMemory;
  const std::string root = t.data_dir().empty()
                               ? absl::StrCat(job.output_dir(), "/tables")
                               : t.data_dir();
  o.data_dir = absl::StrCat(root, "/pserver-", pserver_index);
  o.hot_tier_bytes = t.hot_tier_bytes();
  o.durability = t.durability() == SYNC ? Durability::kSync : Durability::kWal;
  if (t.durability_log() == ROCKSDB_WAL) {
    o.durability_log = DurabilityLog::kRocksDbWal;
  } else if (t.durability_log() == REDO_LOG) {
    o.durability_log = DurabilityLog::kRedoLog;
  }
  if (t.write_back() == MEMTABLE) o.write_back = WriteBack::kMemtable;
  o.row_format = t.row_format() == INT8   ? RowFormat::kInt8
                 : t.row_format() == FP16 ? RowFormat::kFp16
                                          : RowFormat::kFp32;
  o.rounding =
      t.rounding() == NEAREST ? Rounding::kNearest : Rounding::kStochastic;
  const AccessorConfig& a = t.accessor();
  o.nonclk_coeff = a.nonclk_coeff();
  o.click_coeff = a.click_coeff();
  o.embedx_threshold = a.embedx_threshold();
  o.show_decay_rate = a.show_decay_rate();
  o.delete_threshold = a.delete_threshold();
  o.delete_after_unseen_days = a.delete_after_unseen_days();
  o.admit_after_pushes = t.admission().min_pushes();
  o.admit_probability = t.admission().probability();
  return o;
}

}  // namespace sampan
