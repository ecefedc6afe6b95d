#include "cli/render_yaml.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"

namespace sampan {
namespace {

namespace pb = google::protobuf;

// Plain (unquoted) only when YAML 1.1 and 1.2 both read it back as this
// string: letters, digits and a few separators, not starting like a number
// or an indicator, and not a bool/null word.
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* const kWords[] = {"true", "false", "yes", "no", "on",
                                       "off",  "null",  "y",   "n",  "~"};
  const std::string lower = absl::AsciiStrToLower(s);
  for (const char* w : kWords) {
    if (lower == w) return true;
  }
  const unsigned char first = s[0];
  if (!absl::ascii_isalpha(first) && first != '/' && first != '_') return true;
  for (unsigned char c : s) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.' &&
        c != '/' && c != '=') {
      return true;
    }
  }
  return false;
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// The shortest %g form that parses back to the same value.
template <typename T>
std::string ShortestReal(T value) {
  for (int precision = 6; precision < 18; ++precision) {
    const std::string text = absl::StrFormat("%.*g", precision, value);
    if (static_cast<T>(std::strtod(text.c_str(), nullptr)) == value) {
      return text;
    }
  }
  return absl::StrFormat("%.17g", value);
}

Yaml FieldValue(const pb::Message& m, const pb::FieldDescriptor* f, int i) {
  const pb::Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageToYaml(rep ? r->GetRepeatedMessage(m, f, i)
                               : r->GetMessage(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return Yaml(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return Yaml(static_cast<int64_t>(rep ? r->GetRepeatedInt64(m, f, i)
                                           : r->GetInt64(m, f)));
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      return Yaml(rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return Yaml(static_cast<uint64_t>(rep ? r->GetRepeatedUInt64(m, f, i)
                                            : r->GetUInt64(m, f)));
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      return Yaml::Number(
          ShortestReal(rep ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f)));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE:
      return Yaml::Number(ShortestReal(rep ? r->GetRepeatedDouble(m, f, i)
                                           : r->GetDouble(m, f)));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return Yaml(rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f));
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return Yaml(rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* v =
          rep ? r->GetRepeatedEnum(m, f, i) : r->GetEnum(m, f);
      // Enum names are identifiers; emitted plain like numbers.
      return Yaml::Number(v->name());
    }
  }
  return Yaml();
}

}  // namespace

Yaml Yaml::Number(std::string text) {
  Yaml y(Kind::kNumber);
  y.scalar_ = std::move(text);
  return y;
}

Yaml Yaml::Map(std::initializer_list<std::pair<std::string, Yaml>> entries) {
  Yaml y(Kind::kMap);
  for (const auto& [k, v] : entries) y.Set(k, v);
  return y;
}

Yaml Yaml::List(std::initializer_list<Yaml> items) {
  Yaml y(Kind::kList);
  for (const Yaml& v : items) y.Add(v);
  return y;
}

Yaml& Yaml::Set(const std::string& key, Yaml value) {
  kind_ = Kind::kMap;
  for (auto& entry : map_) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return *this;
    }
  }
  map_.emplace_back(key, std::move(value));
  return *this;
}

Yaml& Yaml::Add(Yaml value) {
  kind_ = Kind::kList;
  list_.push_back(std::move(value));
  return *this;
}

std::string Yaml::ScalarText() const {
  switch (kind_) {
    case Kind::kNull:
      return "null";
    case Kind::kString:
      return NeedsQuotes(scalar_) ? Quote(scalar_) : scalar_;
    case Kind::kMap:
      return "{}";
    case Kind::kList:
      return "[]";
    default:
      return scalar_;
  }
}

std::string Yaml::Emit() const {
  std::string out;
  if (kind_ == Kind::kMap && !map_.empty()) {
    EmitMap(0, &out);
  } else if (kind_ == Kind::kList && !list_.empty()) {
    EmitList(0, &out);
  } else {
    out = ScalarText() + "\n";
  }
  return out;
}

// Writes the value after "key:" or "- ": inline for scalars and empty
// collections, else on the following lines at `indent`.
void Yaml::EmitValue(int indent, std::string* out) const {
  if (kind_ == Kind::kMap && !map_.empty()) {
    *out += "\n";
    EmitMap(indent, out);
  } else if (kind_ == Kind::kList && !list_.empty()) {
    *out += "\n";
    EmitList(indent, out);
  } else {
    absl::StrAppend(out, " ", ScalarText(), "\n");
  }
}

void Yaml::EmitMap(int indent, std::string* out) const {
  for (const auto& [key, value] : map_) {
    absl::StrAppend(out, std::string(indent, ' '),
                    NeedsQuotes(key) ? Quote(key) : key, ":");
    value.EmitValue(indent + 2, out);
  }
}

void Yaml::EmitList(int indent, std::string* out) const {
  for (const Yaml& item : list_) {
    absl::StrAppend(out, std::string(indent, ' '), "-");
    if (item.kind_ == Kind::kMap && !item.map_.empty()) {
      // "- key: value" with the rest of the map aligned under the key.
      std::string body;
      item.EmitMap(indent + 2, &body);
      absl::StrAppend(out, " ", body.substr(indent + 2));
    } else {
      item.EmitValue(indent + 2, out);
    }
  }
}

Yaml MessageToYaml(const pb::Message& message) {
  Yaml y = Yaml::Map();
  const pb::Descriptor* d = message.GetDescriptor();
  const pb::Reflection* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (!f->is_repeated()) {
      // An unset enum is left out: the loader refuses *_UNSPECIFIED.
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_ENUM &&
          r->GetEnumValue(message, f) == 0) {
        continue;
      }
      y.Set(f->name(), FieldValue(message, f, 0));
      continue;
    }
    Yaml list = Yaml::List();
    for (int j = 0; j < r->FieldSize(message, f); ++j) {
      list.Add(FieldValue(message, f, j));
    }
    y.Set(f->name(), list);
  }
  return y;
}

}  // namespace sampan
