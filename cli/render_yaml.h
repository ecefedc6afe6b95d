// A small YAML document model for the objects `sampan render` writes.
//
// yaml-cpp's emitter decides quoting itself and writes `true` or `9090` for
// strings that Kubernetes needs as strings (annotations, env values), so
// Sampan builds documents from `Yaml` values that remember whether a scalar
// is a string, and emits them in block style with every string that could
// read as anything else double-quoted. Map keys keep insertion order, so the
// output is stable and diffable. Values are plain data: not thread-safe to
// mutate concurrently, safe to read from many threads.
#ifndef SAMPAN_CLI_RENDER_YAML_H_
#define SAMPAN_CLI_RENDER_YAML_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/message.h"

namespace sampan {

class Yaml {
 public:
  enum class Kind { kNull, kString, kNumber, kBool, kMap, kList };

  Yaml() = default;
  Yaml(const char* s) : kind_(Kind::kString), scalar_(s) {}  // NOLINT
  Yaml(std::string s)
      : kind_(Kind::kString), scalar_(std::move(s)) {}               // NOLINT
  Yaml(int v) : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}  // NOLINT
  Yaml(uint32_t v)
      : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}  // NOLINT
  Yaml(int64_t v)
      : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}  // NOLINT
  Yaml(uint64_t v)
      : kind_(Kind::kNumber), scalar_(std::to_string(v)) {}            // NOLINT
  Yaml(bool v) : kind_(Kind::kBool), scalar_(v ? "true" : "false") {}  // NOLINT

  // A number already formatted (floats keep their shortest round-trip form).
  static Yaml Number(std::string text);
  static Yaml Map() { return Yaml(Kind::kMap); }
  static Yaml List() { return Yaml(Kind::kList); }
  // A map from (key, value) pairs, in order.
  static Yaml Map(std::initializer_list<std::pair<std::string, Yaml>> entries);
  static Yaml List(std::initializer_list<Yaml> items);

  // Map: sets key (replacing an existing one in place). Returns *this.
  Yaml& Set(const std::string& key, Yaml value);
  // List: appends. Returns *this.
  Yaml& Add(Yaml value);
  bool empty() const { return map_.empty() && list_.empty(); }
  Kind kind() const { return kind_; }

  // Block-style YAML, ending in a newline.
  std::string Emit() const;

 private:
  explicit Yaml(Kind kind) : kind_(kind) {}
  void EmitValue(int indent, std::string* out) const;
  void EmitMap(int indent, std::string* out) const;
  void EmitList(int indent, std::string* out) const;
  std::string ScalarText() const;

  Kind kind_ = Kind::kNull;
  std::string scalar_;
  std::vector<std::pair<std::string, Yaml>> map_;
  std::vector<Yaml> list_;
};

// Every field of `message`, set or not, as YAML the config loader reads back
// to an equal message (enums by name, floats in shortest round-trip form;
// enums still at 0 are left out, since the loader refuses *_UNSPECIFIED).
Yaml MessageToYaml(const google::protobuf::Message& message);

}  // namespace sampan

#endif  // SAMPAN_CLI_RENDER_YAML_H_
