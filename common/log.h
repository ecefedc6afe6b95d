// Minimal structured logging to stderr: one line per message, with the time,
// level, process role and source location, so that interleaved child logs
// still say what happened and where.
//
//   SAMPAN_LOG(INFO) << "pserver 1 listening on " << address;
//
// Thread-safe: each message is formatted into a buffer and written with one
// write(2) call.
#ifndef SAMPAN_COMMON_LOG_H_
#define SAMPAN_COMMON_LOG_H_

#include <sstream>
#include <string>

namespace sampan {

enum class LogLevel { kInfo, kWarning, kError, kFatal };

// Names this process in every log line ("pserver-1"); set once in main().
void SetLogRole(const std::string& role);

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();  // writes the line; kFatal then aborts
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace sampan

#define SAMPAN_LOG_INFO ::sampan::LogLevel::kInfo
#define SAMPAN_LOG_WARNING ::sampan::LogLevel::kWarning
#define SAMPAN_LOG_ERROR ::sampan::LogLevel::kError
#define SAMPAN_LOG_FATAL ::sampan::LogLevel::kFatal
#define SAMPAN_LOG(level) \
  ::sampan::LogMessage(SAMPAN_LOG_##level, __FILE__, __LINE__).stream()

#endif  // SAMPAN_COMMON_LOG_H_
