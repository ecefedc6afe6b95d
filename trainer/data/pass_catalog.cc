#include "trainer/data/pass_catalog.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

bool Hidden(const std::string& file_name) {
  return file_name.empty() || file_name[0] == '_' || file_name[0] == '.';
}

// Appends to `dirs` the directories `depth` levels below root/relative.
void Walk(const fs::path& root, const std::string& relative, int depth,
          std::vector<std::string>* dirs) {
  if (depth == 0) {
    dirs->push_back(relative);
    return;
  }
  std::error_code ec;
  fs::directory_iterator it(relative.empty() ? root : root / relative, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    const std::string name = it->path().filename().string();
    if (Hidden(name)) continue;
    Walk(root, relative.empty() ? name : relative + "/" + name, depth - 1,
         dirs);
  }
}

}  // namespace

absl::StatusOr<std::vector<ReadyPass>> ListReadyPasses(
    const StreamConfig& stream) {
  absl::StatusOr<PassPattern> pattern = PassPattern::Compile(stream.pattern());
  if (!pattern.ok()) return pattern.status();
  const fs::path root(stream.root());
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(absl::StrCat("data.stream.root ", stream.root(),
                                            " is not a directory"));
  }
  std::optional<PassTime> start, end;
  if (!stream.start_pass().empty()) start = pattern->Match(stream.start_pass());
  if (!stream.end_pass().empty()) end = pattern->Match(stream.end_pass());
  std::vector<std::string> dirs;
  Walk(root, "", pattern->depth(), &dirs);
  std::vector<ReadyPass> passes;
  for (const std::string& name : dirs) {
    std::optional<PassTime> time = pattern->Match(name);
    if (!time.has_value()) continue;
    if (start.has_value() && time->time < start->time) continue;
    if (end.has_value() && time->time > end->time) continue;
    const fs::path dir = root / name;
    struct stat marker;
    if (::stat((dir / stream.done_marker()).c_str(), &marker) != 0) continue;
    ReadyPass pass;
    pass.name = name;
    pass.time = *time;
    pass.ready_unix_seconds =
        marker.st_mtim.tv_sec + marker.st_mtim.tv_nsec * 1e-9;
    for (fs::directory_iterator it(dir, ec);
         !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (!it->is_regular_file(type_ec)) continue;
      if (Hidden(it->path().filename().string())) continue;
      pass.files.push_back(it->path().string());
    }
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("listing pass ", dir.string(), ": ", ec.message()));
    }
    std::sort(pass.files.begin(), pass.files.end());
    passes.push_back(std::move(pass));
  }
  std::sort(passes.begin(), passes.end(),
            [](const ReadyPass& a, const ReadyPass& b) {
              if (a.time.time != b.time.time) return a.time.time < b.time.time;
              return a.name < b.name;
            });
  return passes;
}

}  // namespace sampan
