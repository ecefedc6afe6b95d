#include "common/pass_pattern.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sampan {

absl::StatusOr<PassPattern> PassPattern::Compile(absl::string_view pattern) {
  PassPattern p;
  bool seen[128] = {};
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c != '%') {
      if (p.tokens_.empty() || p.tokens_.back().field != 0) {
        p.tokens_.push_back(Token());
      }
      p.tokens_.back().literal += c;
      if (c == '/') ++p.depth_;
      continue;
    }
    if (i + 1 == pattern.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern \"", pattern, "\" ends with a lone %"));
    }
    const char f = pattern[++i];
    if (f == '%') {
      if (p.tokens_.empty() || p.tokens_.back().field != 0) {
        p.tokens_.push_back(Token());
      }
      p.tokens_.back().literal += '%';
      continue;
    }
    if (f != 'Y' && f != 'm' && f != 'd' && f != 'H' && f != 'M') {
      return absl::InvalidArgumentError(absl::StrCat(
          "pattern \"", pattern, "\": unknown field %",
          absl::string_view(&f, 1), " (expected %Y, %m, %d, %H, %M or %%)"));
    }
    if (seen[static_cast<int>(f)]) {
      return absl::InvalidArgumentError(
          absl::StrCat("pattern \"", pattern, "\" has %",
                       absl::string_view(&f, 1), " twice"));
    }
    seen[static_cast<int>(f)] = true;
    Token t;
    t.field = f;
    p.tokens_.push_back(t);
  }
  if (!seen['Y'] || !seen['m'] || !seen['d']) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pattern \"", pattern, "\" must have %Y, %m and %d (a pass's day)"));
  }
  if (pattern.front() == '/' || pattern.back() == '/' ||
      pattern.find("//") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("pattern \"", pattern,
                     "\" must be a relative path without empty levels"));
  }
  return p;
}

std::optional<PassTime> PassPattern::Match(absl::string_view relative) const {
  int value[128] = {};
  value['m'] = value['d'] = 1;
  size_t pos = 0;
  for (const Token& t : tokens_) {
    if (t.field == 0) {
      if (relative.substr(pos, t.literal.size()) != t.literal) {
        return std::nullopt;
      }
      pos += t.literal.size();
      continue;
    }
    const size_t width = t.field == 'Y' ? 4 : 2;
    if (pos + width > relative.size()) return std::nullopt;
    int v = 0;
    for (size_t k = 0; k < width; ++k) {
      const char c = relative[pos + k];
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        return std::nullopt;
      }
      v = v * 10 + (c - '0');
    }
    value[static_cast<int>(t.field)] = v;
    pos += width;
  }
  if (pos != relative.size()) return std::nullopt;
  const int y = value['Y'], mo = value['m'], d = value['d'];
  const int h = value['H'], mi = value['M'];
  const absl::CivilMinute time(y, mo, d, h, mi);
  // CivilMinute normalizes out-of-range fields (month 13, hour 24): such a
  // path is not a time.
  if (time.year() != y || time.month() != mo || time.day() != d ||
      time.hour() != h || time.minute() != mi) {
    return std::nullopt;
  }
  return PassTime{time, absl::StrFormat("%04d%02d%02d", y, mo, d)};
}

}  // namespace sampan
