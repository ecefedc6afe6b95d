#include "cli/job_metrics.h"

#include <algorithm>
#include <string>

#include "common/metrics.h"
#include "prometheus/registry.h"

namespace sampan {
namespace {

prometheus::Family<prometheus::Gauge>& GaugeFamily(const char* name,
                                                   const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(
      MetricsRegistry());
}

prometheus::Family<prometheus::Counter>& CounterFamily(const char* name,
                                                       const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(
      MetricsRegistry());
}

const char* RoleName(int role) {
  return role == coord::PSERVER ? "pserver" : "trainer";
}

}  // namespace

JobMetrics::JobMetrics()
    : examples_(CounterFamily("sampan_job_examples_total",
                              "Examples trained, by trainer rank.")),
      bad_rows_(CounterFamily("sampan_job_bad_rows_total",
                              "Malformed input rows skipped, by rank.")),
      loss_(GaugeFamily("sampan_job_train_loss",
                        "Mean log loss of the examples since the last "
                        "heartbeat snapshot, by rank.")),
      auc_(
          GaugeFamily("sampan_job_train_auc", "Streaming train AUC, by rank.")),
      fraction_(GaugeFamily("sampan_job_fraction_done",
                            "Share of the rank's input consumed, 0 to 1.")),
      members_(GaugeFamily("sampan_job_members",
                           "Members the job expects, by role.")),
      alive_(GaugeFamily("sampan_job_members_alive",
                         "Members registered and heartbeating, by role.")),
      rate_(GaugeFamily("sampan_job_examples_per_second",
                        "Examples per second over the whole job between the "
                        "last two snapshots.")
                .Add({})),
      finished_(GaugeFamily("sampan_job_trainers_finished",
                            "Trainer ranks that reported completion.")
                    .Add({})),
      elapsed_(GaugeFamily("sampan_job_elapsed_seconds",
                           "Seconds since the coordinator started.")
                   .Add({})),
      passes_done_(GaugeFamily("sampan_job_passes_done",
                               "data.stream passes trained and published.")
                       .Add({})),
      pass_waiting_(GaugeFamily("sampan_job_pass_waiting_seconds",
                                "Seconds the stream has waited for its next "
                                "pass; 0 while a pass trains.")
                        .Add({})),
      pass_auc_(GaugeFamily("sampan_job_pass_auc",
                            "Progressive validation AUC of the last pass, "
                            "scored before it was trained on.")
                    .Add({})),
      pass_logloss_(GaugeFamily("sampan_job_pass_logloss",
                                "Progressive validation log loss of the "
                                "last pass.")
                        .Add({})),
      pass_copc_(GaugeFamily("sampan_job_pass_copc",
                             "Clicks over predicted clicks of the last "
                             "pass, scored before training.")
                     .Add({})),
      version_(GaugeFamily("sampan_model_version",
                           "The newest model version published.")
                   .Add({})),
      freshness_(GaugeFamily("sampan_model_version_freshness_seconds",
                             "Seconds from the newest version's pass "
                             "marker to the version being published.")
                     .Add({})),
      shard_map_version_(
          GaugeFamily("sampan_job_shard_map_version",
                      "Version of the coordinator's shard map; it moves "
                      "when a pserver registers at another address and "
                      "at every step of a shard move.")
              .Add({})),
      coordinator_restarts_(
          GaugeFamily("sampan_job_coordinator_restarts",
                      "Coordinators of this launch started after the first "
                      "(each resumed the job's state).")
              .Add({})),
      fleet_(GaugeFamily("sampan_job_fleet_pservers",
                         "Pservers in the fleet (state=size) and asked for "
                         "by the last rescale (state=wanted).")),
      fleet_size_(fleet_.Add({{"state", "size"}})),
      fleet_wanted_(fleet_.Add({{"state", "wanted"}})),
      shards_to_move_(GaugeFamily("sampan_job_fleet_shards_to_move",
                                  "Shards the rescale under way still "
                                  "moves; 0 when the fleet is settled.")
                          .Add({})),
      shards_moved_(GaugeFamily("sampan_job_fleet_shards_moved",
                                "Shard moves completed since this "
                                "coordinator started.")
                        .Add({})),
      rows_moved_(GaugeFamily("sampan_job_fleet_rows_moved",
                              "Rows moved between pservers since this "
                              "coordinator started, all tables.")
                      .Add({})) {}

JobMetrics::Rank& JobMetrics::RankAt(int rank) {
  while (static_cast<int>(ranks_.size()) <= rank) {
    const prometheus::Labels labels{{"rank", std::to_string(ranks_.size())}};
    ranks_.push_back(Rank{&examples_.Add(labels), &bad_rows_.Add(labels),
                          &loss_.Add(labels), &auc_.Add(labels),
                          &fraction_.Add(labels)});
  }
  return ranks_[rank];
}

void JobMetrics::Update(const coord::JobStatusResponse& status,
                        absl::Time now) {
  uint64_t total = 0;
  int finished = 0;
  for (int r = 0; r < status.trainers_size(); ++r) {
    const coord::TrainerProgress& p = status.trainers(r);
    Rank& m = RankAt(r);
    // A restarted trainer starts counting again; counters only grow, so
    // they take what it reports after the restart as new work.
    const uint64_t base = p.examples() >= m.last_examples ? m.last_examples : 0;
    m.examples->Increment(static_cast<double>(p.examples() - base));
    const uint64_t bad_base =
        p.bad_rows() >= m.last_bad_rows ? m.last_bad_rows : 0;
    m.bad_rows->Increment(static_cast<double>(p.bad_rows() - bad_base));
    if (p.examples() > base) {
      const double loss_base = base > 0 ? m.last_loss_sum : 0;
      m.loss->Set((p.loss_sum() - loss_base) / (p.examples() - base));
    }
    if (p.examples() > 0) m.auc->Set(p.train_auc());
    m.fraction->Set(p.fraction_done());
    m.last_examples = p.examples();
    m.last_bad_rows = p.bad_rows();
    m.last_loss_sum = p.loss_sum();
    total += p.examples();
    finished += p.finished() ? 1 : 0;
  }
  if (last_time_ != absl::InfinitePast() && now > last_time_ &&
      total >= last_total_) {
    rate_.Set((total - last_total_) / absl::ToDoubleSeconds(now - last_time_));
  }
  last_total_ = total;
  last_time_ = now;
  finished_.Set(finished);
  elapsed_.Set(status.elapsed_seconds());
  shard_map_version_.Set(status.spec().shard_map().version());
  coordinator_restarts_.Set(
      std::max<int>(0, int(status.coordinator_incarnations()) - 1));
  fleet_size_.Set(status.fleet().size());
  fleet_wanted_.Set(status.fleet().wanted());
  shards_to_move_.Set(status.fleet().shards_to_move());
  shards_moved_.Set(status.fleet().shards_moved());
  rows_moved_.Set(status.fleet().rows_moved());
  if (status.trainers_size() > 0) {
    // Rank 0 decides the passes and publishes the versions.
    const coord::TrainerProgress& p = status.trainers(0);
    passes_done_.Set(p.passes_done());
    const double since = p.waiting_since_unix_seconds();
    pass_waiting_.Set(
        since > 0 ? std::max(0.0, absl::ToUnixMicros(now) * 1e-6 - since) : 0);
    if (p.has_last_result()) {
      const coord::PassResult& r = p.last_result();
      pass_auc_.Set(r.auc());
      pass_logloss_.Set(r.logloss());
      pass_copc_.Set(r.copc());
      version_.Set(r.version());
      freshness_.Set(r.freshness_seconds());
    }
  }
  const coord::ClusterSpec& spec = status.spec();
  int alive[3] = {0, 0, 0};
  for (const auto* list : {&spec.pservers(), &spec.trainers()}) {
    for (const coord::Member& m : *list) {
      if (m.alive() && m.role() > 0 && m.role() < 3) ++alive[m.role()];
    }
  }
  members_.Add({{"role", "pserver"}}).Set(spec.num_pservers());
  members_.Add({{"role", "trainer"}}).Set(spec.num_trainers());
  for (int role : {coord::PSERVER, coord::TRAINER}) {
    alive_.Add({{"role", RoleName(role)}}).Set(alive[role]);
  }
}

}  // namespace sampan
