#include "cli/job_prepare.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/resume.h"
#include "google/protobuf/text_format.h"
#include "sparse_table/job_options.h"
#include "trainer/input_queue.h"
#include "trainer/model_version.h"
#include "trainer/trainer.h"
#include "trainer/warm_start.h"

namespace sampan {
namespace {

// The tables as the job starts: restored from the checkpoint resumed from
// or warm-started from, or left as they are.
bool RestoreTables(bool resume, const JobConfig& config, PreparedJob* out) {
  if (resume) {
    // Tables go back to the checkpoint's epoch: the trainers retrain what
    // came after it (docs/operations.md).
    absl::StatusOr<std::string> dir =
        RestoreLatestCheckpoint(config, &out->fleet_seed);
    if (!dir.ok()) {
      std::cerr << "error: --resume: " << dir.status().message() << "\n";
      return false;
    }
    out->resume_from = *dir;
    std::cerr << "resuming from " << out->resume_from << "\n";
  } else if (InitFromCheckpoint(config)) {
    // Warm start from a checkpoint: its tables as they were, optimizer
    // state and statistics included (trainer/warm_start.h).
    if (absl::Status s = RestorePserverSnapshots(config, config.init_model(),
                                                 &out->fleet_seed);
        !s.ok()) {
      std::cerr << "error: init_model: " << s.message() << "\n";
      return false;
    }
    std::cerr << "warm start from checkpoint " << config.init_model() << "\n";
  }
  return true;
}

// data.synthetic: writes the files; the children train on them like any
// file-based job.
bool WriteSyntheticData(JobConfig* config, PreparedJob* out) {
  if (config->data().synthetic().rows() == 0) return true;
  absl::StatusOr<SyntheticData> data = EnsureSyntheticData(*config);
  if (!data.ok()) {
    std::cerr << "error: " << data.status().message() << "\n";
    return false;
  }
  out->synthetic = *data;
  out->synthetic_rows = config->data().synthetic().rows();
  config->mutable_data()->mutable_synthetic()->set_rows(0);
  config->mutable_data()->clear_train_files();
  config->mutable_data()->clear_test_files();
  config->mutable_data()->add_train_files(data->train_path);
  config->mutable_data()->add_test_files(data->test_path);
  return true;
}

bool WriteResolvedConfig(const JobConfig& config, PreparedJob* out) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  out->config_path = absl::StrCat(config.output_dir(), "/job.pbtxt");
  std::ofstream file(out->config_path);
  file << text;
  file.close();
  if (!file) {
    std::cerr << "error: cannot write " << out->config_path << "\n";
    return false;
  }
  return true;
}

}  // namespace

std::string JobLogDir(const JobConfig& config) {
  return config.output_dir() + "/logs";
}

std::string JobMetricsDir(const JobConfig& config) {
  return config.output_dir() + "/metrics";
}

int PrepareJob(bool resume, JobConfig* config, PreparedJob* out) {
  // Data that no trainer could read is the job's error, found before
  // anything starts, not a crash loop of restarted trainers. (Synthetic
  // data is written below, plain.)
  if (config->data().synthetic().rows() == 0) {
    if (absl::Status s = InputQueue::CheckFiles(*config); !s.ok()) {
      std::cerr << "error: " << s.message() << "\n";
      return 2;
    }
  }
  absl::StatusOr<std::string> init = CheckInitModel(*config);
  if (!init.ok()) {
    std::cerr << "error: " << init.status().message() << "\n";
    return 2;
  }
  if (InitFromCheckpoint(*config)) {
    // Every process takes the checkpoint checked here, even if the job
    // that writes that root takes a newer one meanwhile.
    config->set_init_model(*init);
  }
  std::error_code ec;
  std::filesystem::create_directories(JobLogDir(*config), ec);
  if (!ec) std::filesystem::create_directories(JobMetricsDir(*config), ec);
  if (ec) {
    std::cerr << "error: cannot create " << JobLogDir(*config) << ": "
              << ec.message() << "\n";
    return 1;
  }
  std::filesystem::remove(ResultPath(*config), ec);
  if (!RestoreTables(resume, *config, out) ||
      !WriteSyntheticData(config, out) || !WriteResolvedConfig(*config, out)) {
    return 1;
  }
  // After the restores: the tables the pservers will open.
  if (absl::Status s = CheckJobTableLayouts(*config); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace sampan
