// `sampan render` and `sampan submit`: the command-line side of cli/render.h.
//
//   sampan render JOB.yaml --target=k8s -o DIR   writes the kustomize
//       directory (--target=config prints the job with every field instead)
//   sampan submit JOB.yaml [-o DIR]              renders, then
//       `kubectl apply -k DIR` when kubectl has a current context; otherwise
//       exits 1 saying that no cluster is configured, having applied nothing.
#ifndef SAMPAN_CLI_SUBMIT_H_
#define SAMPAN_CLI_SUBMIT_H_

namespace sampan {

// Each returns the process exit status (2 on usage or config errors).
int RenderMain(int argc, char** argv);
int SubmitMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_SUBMIT_H_
