// Mapping YAML onto protobuf messages through reflection, so that a config
// loader follows its .proto schema without per-field code.
//
// Every map key must name a field of the message at that point; nested
// messages are maps, repeated fields are sequences (which replace what the
// message held), enums are given by name, numbers and bools must be plain
// (unquoted) scalars of the right kind and range. Errors name the source,
// the 1-based line and the field path:
//   job.yaml:7: model.hidden[1]: expected integer, got "x"
#ifndef SAMPAN_COMMON_YAML_PROTO_H_
#define SAMPAN_COMMON_YAML_PROTO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "yaml-cpp/yaml.h"

namespace sampan {

// Overlays `root` (a map, or null for nothing) onto `message`; fields the
// YAML leaves out keep their values. InvalidArgument on the first error.
absl::Status MapYamlToMessage(const YAML::Node& root,
                              absl::string_view source_name,
                              google::protobuf::Message* message);

// The 1-based line of `mark`, or "?" where yaml-cpp recorded none.
std::string YamlLine(const YAML::Mark& mark);

}  // namespace sampan

#endif  // SAMPAN_COMMON_YAML_PROTO_H_
