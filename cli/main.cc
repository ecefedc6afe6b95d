// `sampan`: the one binary of every Sampan process. See `sampan help`.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "cli/cli_util.h"
#include "cli/launcher.h"
#include "cli/plan.h"
#include "cli/predict.h"
#include "cli/scale.h"
#include "cli/status.h"
#include "cli/submit.h"
#include "common/config.h"
#include "common/flags.h"
#include "common/log.h"
#include "google/protobuf/text_format.h"
#include "sparse_table/job_options.h"
#include "trainer/data/synthetic.h"
#include "trainer/eval_job.h"
#include "trainer/input_queue.h"
#include "trainer/local_job.h"
#include "trainer/warm_start.h"

namespace sampan {

int SimilarityMain(int argc, char** argv);  // similarity_main.cc

namespace {

constexpr char kUsage[] = R"(usage: sampan <command> [flags]

commands:
  run JOB.yaml [--resume] run a whole job locally: coordinator, pservers and
                          trainers as child processes; prints test AUC.
                          --resume: restore tables, data positions from the
                          latest complete checkpoint (checkpoint.dir)
  validate JOB.yaml       check a job config; exit status 2 on any error
  train-local JOB.yaml    train the job's model (any type, incl. DNN,
                          WIDE_DEEP, DEEPFM, DCN_V2) in this process with an
                          in-memory table; prints test AUC, logloss, COPC.
                          --curve_points=N: score the test set N times
                          while training, for report.html (10; 0: at the
                          end only, e.g. to time training alone)
  eval MODEL DATA         score a model on a data file of its format;
                          prints AUC, logloss, COPC and rows. MODEL: an
                          exported model (<output_dir>/model of a finished
                          run or train-local), a model version
                          (<output_dir>/versions/v-N: its base and deltas)
                          or a versions root (the version LATEST names)
  similarity VECTORS PAIRS
                          Spearman correlation of word-vector cosines
                          (word2vec text format, e.g. a WORD2VEC job's
                          vectors.vec) with scored pairs (word1 word2 score)
  model-rows MODEL        print MODEL's sparse rows sorted by key (key, tab,
                          the floats' bits in hex; rows of zeros left out)
                          and a hash of its dense weights
  gen-data --out=DIR [--rows=N] [--seed=S] [--test_fraction=F]
           [--vocab_scale=K]
                          write Criteo-shaped synthetic data from a planted
                          model (train.tsv, test.tsv, test.planted); K
                          multiplies each categorical vocabulary
  gen-data --out=ROOT --stream_days=D [--passes_per_day=24]
           [--parts_per_pass=2] [--rows=ROWS_PER_PASS] [--drift=0.05]
           [--start_day=2026-12-01] [--seed=S]
                          write a stream of passes ROOT/YYYYMMDD/HH/part-*
                          with _SUCCESS markers from a planted model whose
                          values drift every day
  render JOB.yaml --target=k8s -o DIR
                          write Kubernetes objects (a kustomize directory);
                          --target=config prints the job with every field
  submit JOB.yaml [-o DIR]
                          render, then `kubectl apply -k` to the current
                          kubectl context (error when there is none)
  status [JOB.yaml] [--coordinator=HOST:PORT]
                          state, ranks, throughput, loss and AUC of a running
                          job (a local one from JOB.yaml alone)
  scale JOB.yaml --pservers=N [--coordinator=HOST:PORT] [--wait_seconds=600]
                          rescale a running job's pserver fleet: shards move
                          live (fewest moves), pushes pause briefly, nothing
                          acknowledged is lost; waits until it is done
  plan --rows=N|--parameters=N --examples_per_second=E [--dim=16]
       [--row_format=FP32|FP16|INT8]
       [--model=FM|DEEPFM] [--batch_size=1024] [--keys_per_example=39]
       [--unique_fraction=0.5] [--hot_rows=0.2] [--hot_hits=0.9]
       [--node_cores=32 --node_ram_gib=256 --node_disk_tib=4
        --node_network_gbps=25] [--pull_p99_ms=MS]
                          pservers, trainers, shards, RAM, disk, network
                          and latency for a job, each from a figure
                          measured here (docs/capacity.md)
  plan --fleet=P [--clients=2 --cores=2]
                          what bench/ps_load.sh P C measures, predicted
  serve JOB.yaml [--port=P] [--port_file=F] [--model=PATH] [--version=N]
                          answer Predict calls (proto/serving.proto) from
                          the job's model (serving: section; default the
                          newest version under <output_dir>/versions,
                          followed as training publishes); gRPC health is
                          SERVING once a version is loaded (and
                          --ready_file=F exists only then). Also --host,
                          --metrics_port, --metrics_port_file as below
  predict JOB.yaml DATA_FILE [--address=HOST:PORT] [--batch=100]
          [--version=V]
                          score DATA_FILE's lines through a running `sampan
                          serve` (default: the one `run` started for the job,
                          serving.enabled); prints probability and version
                          per line
  coordinator --config=F [--port=P] [--port_file=F]
  pserver --config=F --index=I [--coordinator=HOST:PORT] [--port=P]
          [--port_file=F]
  trainer --config=F --rank=R --coordinator=HOST:PORT [--checkpoint=DIR]
          [--generation=G]
                          the processes `run` starts; --config takes the job
                          YAML or the resolved job.pbtxt that `run` writes.
                          --checkpoint=latest: the newest complete one under
                          checkpoint.dir, or the start when there is none
                          (what rendered Kubernetes trainer pods pass).
                          All three also take --host=H (bind and advertise
                          H instead of cluster.host), --metrics_port=P
                          (serve /metrics; 0 = any free port) and
                          --metrics_port_file=F (write the bound port to F);
                          coordinator and pserver --advertise=NAME (others
                          reach it, and check its TLS certificate, by NAME
                          instead of H: a pod's DNS name on Kubernetes)
)";

// Parses flags and the --config they name; exits with status 2 on error.
int ValidateMain(int argc, char** argv) {
  if (argc != 3)
    return ConfigError(
        absl::InvalidArgumentError("usage: sampan validate JOB.yaml"));
  absl::StatusOr<JobConfig> config = LoadJobConfig(argv[2]);
  if (!config.ok()) return ConfigError(config.status());
  if (absl::Status s = ValidateForRun(*config); !s.ok()) {
    return ConfigError(
        absl::InvalidArgumentError(absl::StrCat(argv[2], ": ", s.message())));
  }
  if (absl::Status s = CheckInitModel(*config).status(); !s.ok()) {
    return ConfigError(
        absl::InvalidArgumentError(absl::StrCat(argv[2], ": ", s.message())));
  }
  // The tables a run would open, where they are on this machine.
  if (absl::Status s = CheckJobTableLayouts(*config); !s.ok()) {
    return ConfigError(
        absl::InvalidArgumentError(absl::StrCat(argv[2], ": ", s.message())));
  }
  // The files, opened as the trainers will (a gzip file split by byte
  // range is refused here, not when `run` starts), where they are present:
  // a job validated away from its data (Kubernetes volumes) is not failed.
  bool files_here = config->data().synthetic().rows() == 0;
  for (const std::string& f : config->data().train_files()) {
    std::error_code ec;
    files_here = files_here && std::filesystem::exists(f, ec);
  }
  if (files_here && config->data().stream().root().empty()) {
    if (absl::Status s = InputQueue::CheckFiles(*config); !s.ok()) {
      return ConfigError(
          absl::InvalidArgumentError(absl::StrCat(argv[2], ": ", s.message())));
    }
  }
  std::cout << argv[2] << ": ok (" << ModelType_Name(config->model().type())
            << ", " << config->cluster().num_pservers() << " pservers, "
            << config->cluster().num_trainers() << " trainers)\n";
  return 0;
}

int RunMain(int argc, char** argv) {
  const bool resume = argc == 4 && std::string(argv[3]) == "--resume";
  if (argc != 3 && !resume) {
    return ConfigError(
        absl::InvalidArgumentError("usage: sampan run JOB.yaml [--resume]"));
  }
  absl::StatusOr<JobConfig> config = LoadJobConfig(argv[2]);
  if (!config.ok()) return ConfigError(config.status());
  if (absl::Status s = ValidateForRun(*config); !s.ok()) {
    return ConfigError(
        absl::InvalidArgumentError(absl::StrCat(argv[2], ": ", s.message())));
  }
  return RunLocalJob(*config, resume);
}

int PredictMain(int argc, char** argv) {
  if (argc < 4 || absl::StartsWith(argv[2], "--") ||
      absl::StartsWith(argv[3], "--")) {
    return ConfigError(absl::InvalidArgumentError(
        "usage: sampan predict JOB.yaml DATA_FILE [--address=HOST:PORT] "
        "[--batch=N] [--version=V]"));
  }
  absl::StatusOr<Flags> flags =
      Flags::Parse(argc, argv, 4, {"address", "batch", "version"});
  if (!flags.ok()) return ConfigError(flags.status());
  absl::StatusOr<JobConfig> config = LoadAnyConfig(argv[2]);
  if (!config.ok()) return ConfigError(config.status());
  PredictFileOptions options;
  options.address = flags->Get("address");
  options.data_file = argv[3];
  const int64_t batch = IntFlagOrExit(*flags, "batch", 100);
  if (batch < 1 || batch > config->serving().max_examples_per_request()) {
    return ConfigError(absl::InvalidArgumentError(absl::StrCat(
        "--batch must be in [1, serving.max_examples_per_request = ",
        config->serving().max_examples_per_request(), "], got ", batch)));
  }
  options.batch = uint32_t(batch);
  options.version = IntFlagOrExit(*flags, "version", 0);
  absl::StatusOr<PredictFileResult> r =
      PredictFile(*config, options, &std::cout);
  if (!r.ok()) return Fail(r.status());
  std::string versions;
  for (const auto& [version, n] : r->by_version) {
    absl::StrAppend(&versions, versions.empty() ? "" : ", ", n, " by v-",
                    absl::StrFormat("%06d", version));
  }
  std::cerr << "predict: " << r->examples << " examples from " << argv[3]
            << " at " << r->address << " (" << versions << ")\n";
  return 0;
}

int TrainLocalMain(int argc, char** argv) {
  absl::StatusOr<Flags> flags = Flags::Parse(argc, argv, 2, {"curve_points"});
  if (!flags.ok()) return ConfigError(flags.status());
  absl::StatusOr<int64_t> points = flags->GetInt("curve_points", 10);
  if (!points.ok()) return ConfigError(points.status());
  if (flags->positional().size() != 1 || *points < 0 || *points > 1000) {
    return ConfigError(absl::InvalidArgumentError(
        "usage: sampan train-local JOB.yaml [--curve_points=N in [0, 1000]]"));
  }
  const std::string path = flags->positional()[0];
  absl::StatusOr<JobConfig> config = LoadJobConfig(path);
  if (!config.ok()) return ConfigError(config.status());
  if (absl::Status s = ValidateForTrainLocal(*config); !s.ok()) {
    return ConfigError(
        absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message())));
  }
  absl::Status s = TrainLocalJob(*config, static_cast<int>(*points));
  return s.ok() ? 0 : Fail(s);
}

int EvalMain(int argc, char** argv) {
  if (argc != 4) {
    return ConfigError(
        absl::InvalidArgumentError("usage: sampan eval MODEL DATA_FILE"));
  }
  std::string version;
  absl::StatusOr<EvalMetrics> m = EvaluateModel(argv[2], argv[3], &version);
  if (!m.ok()) return Fail(m.status());
  // An exported model prints the metrics alone, as scripts expect.
  if (!version.empty()) std::cout << "version " << version << "\n";
  std::cout << absl::StrFormat("AUC %.6f  logloss %.6f  COPC %.4f  rows %d\n",
                               m->auc, m->logloss, m->copc, m->rows);
  return 0;
}

int ModelRowsMain(int argc, char** argv) {
  if (argc != 3) {
    return ConfigError(
        absl::InvalidArgumentError("usage: sampan model-rows MODEL"));
  }
  std::string version;
  absl::Status s = WriteModelRows(argv[2], &std::cout, &version);
  if (!s.ok()) return Fail(s);
  std::cerr << "model-rows: " << (version.empty() ? argv[2] : version) << "\n";
  return 0;
}

// --vocab_scale, in [1, 1000]; exits with status 2 otherwise.
uint32_t VocabScaleOrExit(const Flags& flags) {
  const int64_t vocab_scale = IntFlagOrExit(flags, "vocab_scale", 1);
  if (vocab_scale < 1 || vocab_scale > 1000) {
    std::exit(ConfigError(absl::InvalidArgumentError(absl::StrCat(
        "--vocab_scale must be in [1, 1000], got ", vocab_scale))));
  }
  return uint32_t(vocab_scale);
}

// gen-data --stream_days=D: the pass layout of continuous training.
int GenStreamMain(const Flags& flags) {
  StreamOptions options;
  options.vocab_scale = VocabScaleOrExit(flags);
  options.days = IntFlagOrExit(flags, "stream_days", 2);
  options.passes_per_day = IntFlagOrExit(flags, "passes_per_day", 24);
  options.parts_per_pass = IntFlagOrExit(flags, "parts_per_pass", 2);
  options.rows_per_pass = IntFlagOrExit(flags, "rows", 100000);
  options.seed = IntFlagOrExit(flags, "seed", 1);
  if (!absl::SimpleAtod(flags.Get("drift", "0.05"), &options.drift)) {
    return ConfigError(absl::InvalidArgumentError(
        "--drift: expected a number, got \"" + flags.Get("drift") + "\""));
  }
  options.start_day = flags.Get("start_day", options.start_day);
  const std::string root = flags.Get("out");
  absl::StatusOr<StreamResult> r = GenerateCriteoStream(options, root);
  if (!r.ok()) {
    return r.status().code() == absl::StatusCode::kInvalidArgument
               ? ConfigError(r.status())
               : Fail(r.status());
  }
  std::cout << absl::StrFormat(
      "wrote %d passes of %d rows under %s (%s .. %s, marker %s)\n"
      "planted model on every row: AUC %.6f\n",
      r->passes.size(), options.rows_per_pass, root, r->passes.front(),
      r->passes.back(), options.marker, r->planted_auc);
  return 0;
}

int GenDataMain(int argc, char** argv) {
  absl::StatusOr<Flags> flags = Flags::Parse(
      argc, argv, 2,
      {"out", "rows", "seed", "test_fraction", "vocab_scale", "stream_days",
       "passes_per_day", "parts_per_pass", "drift", "start_day"});
  if (!flags.ok()) return ConfigError(flags.status());
  if (!flags->Has("out")) {
    return ConfigError(absl::InvalidArgumentError("--out=DIR is required"));
  }
  if (flags->Has("stream_days")) return GenStreamMain(*flags);
  SyntheticOptions options;
  options.rows = IntFlagOrExit(*flags, "rows", 1000000);
  options.seed = IntFlagOrExit(*flags, "seed", 1);
  options.vocab_scale = VocabScaleOrExit(*flags);
  options.test_fraction = std::stod(flags->Get("test_fraction", "0.1"));
  const std::string dir = flags->Get("out");
  std::filesystem::create_directories(dir);
  auto result = GenerateCriteoData(options, dir + "/train.tsv",
                                   dir + "/test.tsv", dir + "/test.planted");
  if (!result.ok()) return Fail(result.status());
  std::cout << absl::StrFormat(
      "wrote %d train and %d test rows to %s (train CTR %.4f)\n"
      "planted model on the test rows: AUC %.6f  logloss %.6f\n",
      result->train_rows, result->test_rows, dir, result->train_ctr,
      result->planted_test_auc, result->planted_test_logloss);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) {
  using namespace sampan;
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's deadlock
  // detector on: every lock gRPC takes then updates a lock-order graph
  // (~1% of a loaded fleet's CPU, perf). Release builds of Abseil skip it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::string command = argc > 1 ? argv[1] : "help";
  if (command == "run") return RunMain(argc, argv);
  if (command == "validate") return ValidateMain(argc, argv);
  if (command == "train-local") return TrainLocalMain(argc, argv);
  if (command == "eval") return EvalMain(argc, argv);
  if (command == "model-rows") return ModelRowsMain(argc, argv);
  if (command == "similarity") return SimilarityMain(argc, argv);
  if (command == "gen-data") return GenDataMain(argc, argv);
  if (command == "render") return RenderMain(argc, argv);
  if (command == "submit") return SubmitMain(argc, argv);
  if (command == "status") return StatusMain(argc, argv);
  if (command == "scale") return ScaleMain(argc, argv);
  if (command == "plan") return PlanMain(argc, argv);
  if (command == "serve") return ServeMain(argc, argv);
  if (command == "predict") return PredictMain(argc, argv);
  if (command == "coordinator") return CoordinatorMain(argc, argv);
  if (command == "pserver") return PserverMain(argc, argv);
  if (command == "trainer") return TrainerMain(argc, argv);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  std::cerr << "unknown command '" << command << "'\n" << kUsage;
  return kExitConfigError;
}
