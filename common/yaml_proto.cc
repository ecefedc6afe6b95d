#include "common/yaml_proto.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"

namespace sampan {
namespace {

namespace pb = google::protobuf;
using R = pb::Reflection;

std::string ChildPath(const std::string& parent, absl::string_view name) {
  return parent.empty() ? std::string(name) : absl::StrCat(parent, ".", name);
}

// True for text that reads as a whole number, so an overflowing value gets a
// range message instead of "expected integer".
bool LooksIntegral(absl::string_view text) {
  if (absl::StartsWith(text, "-") || absl::StartsWith(text, "+")) {
    text.remove_prefix(1);
  }
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// yaml-cpp tags plain scalars "?" and quoted ones "!"; a quoted "5" is a
// string in YAML, so numeric and bool fields refuse it.
bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// 1-based, as editors count; "?" where yaml-cpp recorded no position.
std::string LineOf(const YAML::Mark& mark) {
  return mark.is_null() ? "?" : absl::StrCat(mark.line + 1);
}

// What the user wrote, for the "got ..." half of an error.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Scalar:
      return absl::StrCat(IsQuoted(node) ? "quoted string " : "", "\"",
                          absl::CEscape(node.Scalar()), "\"");
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

// Proto3 enums reserve 0 for "not set"; it is not a value a user may choose.
bool IsUnspecified(const pb::EnumValueDescriptor& value) {
  return value.number() == 0 && absl::EndsWith(value.name(), "_UNSPECIFIED");
}

std::string EnumNames(const pb::EnumDescriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.value_count(); ++i) {
    if (!IsUnspecified(*type.value(i))) names.push_back(type.value(i)->name());
  }
  return absl::StrJoin(names, ", ");
}

std::string FieldNames(const pb::Descriptor& type) {
  std::vector<std::string> names;
  for (int i = 0; i < type.field_count(); ++i) {
    names.push_back(type.field(i)->name());
  }
  return absl::StrJoin(names, ", ");
}

// Sets a singular field or appends to a repeated one, so each scalar type
// needs one parser and one line in MapValue rather than two code paths.
template <typename T, typename Set, typename Add>
absl::Status Store(const absl::StatusOr<T>& value, pb::Message* msg,
                   const pb::FieldDescriptor* field, Set set, Add add) {
  if (!value.ok()) return value.status();
  const R* reflection = msg->GetReflection();
  if (field->is_repeated()) {
    (reflection->*add)(msg, field, *value);
  } else {
    (reflection->*set)(msg, field, *value);
  }
  return absl::OkStatus();
}

// A YAML value with where it sits: its field path, and the mark errors cite.
struct Located {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
};

// yaml-cpp gives an empty value (`name:` at the end of a line) the position
// of the next token, often lines later; such errors cite `owner` instead.
Located Locate(const YAML::Node& node, std::string path,
               const YAML::Mark& owner) {
  return {node, std::move(path), node.IsNull() ? owner : node.Mark()};
}

// Maps a YAML tree onto a message through reflection, so the loader follows
// job.proto without per-field code. Every error names source:line: path.
class YamlMapper {
 public:
  explicit YamlMapper(absl::string_view source) : source_(source) {}

  absl::Status MapMessage(const Located& at, pb::Message* msg) const;

 private:
  absl::StatusOr<const pb::FieldDescriptor*> FindField(
      const YAML::Node& key, const std::string& path,
      const pb::Descriptor& type) const;
  absl::Status MapRepeated(const Located& at, pb::Message* msg,
                           const pb::FieldDescriptor* field) const;
  absl::Status MapValue(const Located& at, pb::Message* msg,
                        const pb::FieldDescriptor* field) const;

  absl::StatusOr<std::string> PlainScalar(const Located& at,
                                          absl::string_view expected) const;
  absl::StatusOr<int64_t> ParseSigned(const Located& at, int64_t min,
                                      int64_t max) const;
  absl::StatusOr<uint64_t> ParseUnsigned(const Located& at, uint64_t max) const;
  absl::StatusOr<double> ParseReal(const Located& at, double max) const;
  absl::StatusOr<bool> ParseBool(const Located& at) const;
  absl::StatusOr<std::string> ParseString(const Located& at) const;
  absl::StatusOr<const pb::EnumValueDescriptor*> ParseEnum(
      const Located& at, const pb::EnumDescriptor& type) const;

  absl::Status Error(const Located& at, absl::string_view expected) const;
  absl::Status ErrorAt(const YAML::Mark& mark, const std::string& path,
                       absl::string_view what) const;

  std::string source_;
};

absl::Status YamlMapper::MapMessage(const Located& at, pb::Message* msg) const {
  // `cluster:` with every entry commented out keeps the defaults.
  if (at.node.IsNull()) return absl::OkStatus();
  if (!at.node.IsMap()) return Error(at, "a map");
  std::set<const pb::FieldDescriptor*> seen;
  for (const auto& entry : at.node) {
    absl::StatusOr<const pb::FieldDescriptor*> field =
        FindField(entry.first, at.path, *msg->GetDescriptor());
    if (!field.ok()) return field.status();
    const Located value = Locate(
        entry.second, ChildPath(at.path, (*field)->name()), entry.first.Mark());
    // yaml-cpp keeps both copies of a repeated key; the later one would
    // silently win, which hides typos.
    if (!seen.insert(*field).second) {
      return ErrorAt(entry.first.Mark(), value.path, "duplicate key");
    }
    absl::Status status = (*field)->is_repeated()
                              ? MapRepeated(value, msg, *field)
                              : MapValue(value, msg, *field);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<const pb::FieldDescriptor*> YamlMapper::FindField(
    const YAML::Node& key, const std::string& path,
    const pb::Descriptor& type) const {
  if (!key.IsScalar()) return Error({key, path, key.Mark()}, "a field name");
  const pb::FieldDescriptor* field = type.FindFieldByName(key.Scalar());
  if (field == nullptr) {
    return ErrorAt(
        key.Mark(), ChildPath(path, key.Scalar()),
        absl::StrCat("unknown field \"", absl::CEscape(key.Scalar()),
                     "\" (expected one of: ", FieldNames(type), ")"));
  }
  return field;
}

absl::Status YamlMapper::MapRepeated(const Located& at, pb::Message* msg,
                                     const pb::FieldDescriptor* field) const {
  if (!at.node.IsSequence()) return Error(at, "a sequence");
  // A YAML list replaces the default list; appending would make defaults
  // impossible to remove.
  msg->GetReflection()->ClearField(msg, field);
  for (size_t i = 0; i < at.node.size(); ++i) {
    absl::Status status = MapValue(
        Locate(at.node[i], absl::StrCat(at.path, "[", i, "]"), at.mark), msg,
        field);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status YamlMapper::MapValue(const Located& at, pb::Message* msg,
                                  const pb::FieldDescriptor* field) const {
  constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: {
      const R* reflection = msg->GetReflection();
      return MapMessage(at, field->is_repeated()
                                ? reflection->AddMessage(msg, field)
                                : reflection->MutableMessage(msg, field));
    }
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return Store(ParseSigned(at, kMin32, kMax32), msg, field, &R::SetInt32,
                   &R::AddInt32);
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return Store(ParseSigned(at, -kMax64 - 1, kMax64), msg, field,
                   &R::SetInt64, &R::AddInt64);
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return Store(ParseUnsigned(at, UINT32_MAX), msg, field, &R::SetUInt32,
                   &R::AddUInt32);
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return Store(ParseUnsigned(at, UINT64_MAX), msg, field, &R::SetUInt64,
                   &R::AddUInt64);
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return Store(ParseReal(at, FLT_MAX), msg, field, &R::SetFloat,
                   &R::AddFloat);
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return Store(ParseReal(at, DBL_MAX), msg, field, &R::SetDouble,
                   &R::AddDouble);
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return Store(ParseBool(at), msg, field, &R::SetBool, &R::AddBool);
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return Store(ParseString(at), msg, field, &R::SetString, &R::AddString);
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      return Store(ParseEnum(at, *field->enum_type()), msg, field, &R::SetEnum,
                   &R::AddEnum);
  }
  return ErrorAt(at.mark, at.path, "field type not supported by the loader");
}

absl::StatusOr<std::string> YamlMapper::PlainScalar(
    const Located& at, absl::string_view expected) const {
  if (!at.node.IsScalar() || IsQuoted(at.node)) return Error(at, expected);
  return at.node.Scalar();
}

absl::StatusOr<int64_t> YamlMapper::ParseSigned(const Located& at, int64_t min,
                                                int64_t max) const {
  absl::StatusOr<std::string> text = PlainScalar(at, "integer");
  if (!text.ok()) return text.status();
  int64_t value = 0;
  const bool parsed = absl::SimpleAtoi(*text, &value);
  if (!parsed && !LooksIntegral(*text)) return Error(at, "integer");
  if (!parsed || value < min || value > max) {
    return Error(at, absl::StrCat("integer in [", min, ", ", max, "]"));
  }
  return value;
}

absl::StatusOr<uint64_t> YamlMapper::ParseUnsigned(const Located& at,
                                                   uint64_t max) const {
  absl::StatusOr<std::string> text = PlainScalar(at, "integer");
  if (!text.ok()) return text.status();
  uint64_t value = 0;
  const bool parsed = absl::SimpleAtoi(*text, &value);
  if (!parsed && !LooksIntegral(*text)) return Error(at, "integer");
  if (!parsed && absl::StartsWith(*text, "-")) {
    return Error(at, "non-negative integer");
  }
  if (!parsed || value > max) {
    return Error(at, absl::StrCat("integer in [0, ", max, "]"));
  }
  return value;
}

absl::StatusOr<double> YamlMapper::ParseReal(const Located& at,
                                             double max) const {
  absl::StatusOr<std::string> text = PlainScalar(at, "number");
  if (!text.ok()) return text.status();
  double value = 0;
  if (!absl::SimpleAtod(*text, &value) || !std::isfinite(value)) {
    return Error(at, "finite number");
  }
  if (std::fabs(value) > max) {
    return Error(at, absl::StrCat("number of magnitude <= ", max));
  }
  return value;
}

absl::StatusOr<bool> YamlMapper::ParseBool(const Located& at) const {
  absl::StatusOr<std::string> text = PlainScalar(at, "true or false");
  if (!text.ok()) return text.status();
  if (absl::EqualsIgnoreCase(*text, "true")) return true;
  if (absl::EqualsIgnoreCase(*text, "false")) return false;
  return Error(at, "true or false");
}

absl::StatusOr<std::string> YamlMapper::ParseString(const Located& at) const {
  if (!at.node.IsScalar()) return Error(at, "string");
  return at.node.Scalar();
}

absl::StatusOr<const pb::EnumValueDescriptor*> YamlMapper::ParseEnum(
    const Located& at, const pb::EnumDescriptor& type) const {
  const std::string expected = absl::StrCat("one of ", EnumNames(type));
  if (!at.node.IsScalar()) return Error(at, expected);
  for (int i = 0; i < type.value_count(); ++i) {
    const pb::EnumValueDescriptor* value = type.value(i);
    if (!IsUnspecified(*value) &&
        absl::EqualsIgnoreCase(value->name(), at.node.Scalar())) {
      return value;
    }
  }
  return Error(at, expected);
}

absl::Status YamlMapper::Error(const Located& at,
                               absl::string_view expected) const {
  return ErrorAt(
      at.mark, at.path,
      absl::StrCat("expected ", expected, ", got ", Describe(at.node)));
}

absl::Status YamlMapper::ErrorAt(const YAML::Mark& mark,
                                 const std::string& path,
                                 absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat(source_, ":", LineOf(mark), ": ",
                   path.empty() ? "(top level)" : path, ": ", what));
}

}  // namespace

absl::Status MapYamlToMessage(const YAML::Node& root,
                              absl::string_view source_name,
                              google::protobuf::Message* message) {
  return YamlMapper(source_name).MapMessage({root, "", root.Mark()}, message);
}

std::string YamlLine(const YAML::Mark& mark) { return LineOf(mark); }

}  // namespace sampan
