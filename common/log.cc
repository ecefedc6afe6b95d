#include "common/log.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sampan {
namespace {

std::string& Role() {
  static std::string* role = new std::string("sampan");
  return *role;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
      return "I";
    case LogLevel::kWarning:
      return "W";
    case LogLevel::kError:
      return "E";
    case LogLevel::kFatal:
      return "F";
  }
  return "?";
}

}  // namespace

void SetLogRole(const std::string& role) { Role() = role; }

LogMessage::LogMessage(LogLevel level, const char* file, int line)
    : level_(level) {
  const char* base = std::strrchr(file, '/');
  stream_ << LevelName(level) << " "
          << absl::FormatTime("%H:%M:%E3S", absl::Now(), absl::LocalTimeZone())
          << " " << Role() << " " << (base ? base + 1 : file) << ":" << line
          << "] ";
}

LogMessage::~LogMessage() {
  stream_ << "\n";
  const std::string text = stream_.str();
  (void)!write(STDERR_FILENO, text.data(), text.size());
  if (level_ == LogLevel::kFatal) std::abort();
}

}  // namespace sampan
