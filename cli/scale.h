// `sampan scale JOB.yaml --pservers=N [--coordinator=HOST:PORT]
// [--wait_seconds=600]`: asks a running job's coordinator for a fleet of N
// pservers (coordinator.proto Scale), then follows the rescale through
// JobStatus until the fleet is N pservers with every shard in place,
// printing each step. `sampan run` starts the new pservers and stops those
// that leave; the coordinator moves the shards (coordinator/fleet.h). With
// --target=k8s, a submitted job's StatefulSet is scaled around the same
// steps run inside the coordinator's pod (cli/submit.h ScaleOnKubernetes).
//
// Exit status: 0 done (or asked, with --wait_seconds=0); 2 a bad flag, a
// config that does not load, or a size the job refuses (0, more than
// table.num_shards); 1 the job cannot be reached, refuses because a rescale
// is under way, or the rescale did not end in time (it goes on).
#ifndef SAMPAN_CLI_SCALE_H_
#define SAMPAN_CLI_SCALE_H_

namespace sampan {

int ScaleMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_SCALE_H_
