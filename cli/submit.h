// `sampan render` and `sampan submit`: the command-line side of cli/render.h.
//
//   sampan render JOB.yaml --target=k8s -o DIR   writes the kustomize
//       directory (--target=config prints the job with every field instead)
//   sampan submit JOB.yaml [-o DIR]              renders, then
//       `kubectl apply -k DIR` when kubectl has a current context; otherwise
//       exits 1 saying that no cluster is configured, having applied nothing.
//   sampan scale JOB.yaml --pservers=N --target=k8s   (ScaleOnKubernetes)
#ifndef SAMPAN_CLI_SUBMIT_H_
#define SAMPAN_CLI_SUBMIT_H_

#include <cstdint>

#include "proto/job.pb.h"

namespace sampan {

// Each returns the process exit status (2 on usage or config errors).
int RenderMain(int argc, char** argv);
int SubmitMain(int argc, char** argv);

// `sampan scale JOB.yaml --pservers=N --target=k8s` (cli/scale.h) for a
// submitted job, through kubectl's current context: growing, scales the
// pserver StatefulSet to N first; then runs `sampan scale` inside the
// coordinator's pod (where the coordinator listens), which asks for the
// fleet and waits for the shards to move; shrinking, scales the
// StatefulSet down after that (the pods leaving own nothing then). Returns
// the exit status; a failed step says which command failed.
int ScaleOnKubernetes(const JobConfig& job, uint32_t pservers,
                      double wait_seconds);

}  // namespace sampan

#endif  // SAMPAN_CLI_SUBMIT_H_
