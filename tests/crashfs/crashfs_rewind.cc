// crashfs_rewind STATE ROOT: the power cut of crashfs (crashfs.h).
//
// Replaces the tree ROOT by the state that the process which ran under
// libcrashfs.so recorded in STATE (that process must be dead: SIGKILL it
// first), then deletes STATE. Prints one line per file the cut changed and
// a summary line:
//   crashfs: ROOT: F files kept (B bytes); cut: D bytes dropped from N
//   files, G files gone, K names back; FILE_SYNCS file syncs, DIR_SYNCS
//   directory syncs seen
// Exit status: 0 done; 1 the state is unusable; 2 bad arguments or the
// process still running.
#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/crashfs/crashfs.h"

namespace fs = std::filesystem;

namespace {

struct Durable {
  std::map<std::string, fs::path> files;  // relative path -> blob link
  std::set<std::string> dirs;
};

[[noreturn]] void Fail(int status, const std::string& msg) {
  std::fprintf(stderr, "crashfs_rewind: %s\n", msg.c_str());
  std::exit(status);
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True while `pid` runs (a zombie has stopped running).
bool Running(long pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || stat.size() < close + 3 ||
         stat[close + 2] != 'Z';
}

// Collects directory `id`'s durable entries under `rel`.
void Walk(const fs::path& state, const std::string& id, const std::string& rel,
          int depth, Durable* d) {
  if (depth > 64) Fail(1, "directory nesting past 64 at " + rel);
  const fs::path dir = state / crashfs::kDirsDir / id;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;  // never synced: empty
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(crashfs::kTempPrefix, 0) == 0) continue;
    const std::string child = rel.empty() ? name : rel + "/" + name;
    if (e.is_symlink()) {
      d->dirs.insert(child);
      Walk(state, fs::read_symlink(e.path()).string(), child, depth + 1, d);
    } else {
      d->files[child] = e.path();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) Fail(2, "usage: crashfs_rewind STATE ROOT");
  const fs::path state = argv[1], root = argv[2];
  std::error_code ec;
  if (!fs::is_directory(state / crashfs::kDirsDir, ec)) {
    Fail(1, state.string() + ": not a crashfs state");
  }
  const long owner = std::atol(ReadFile(state / crashfs::kOwnerFile).c_str());
  if (Running(owner)) {
    Fail(2, "process " + std::to_string(owner) +
                " still runs: SIGKILL it (and wait) before the cut");
  }
  std::string root_id = ReadFile(state / crashfs::kRootFile);
  while (!root_id.empty() && root_id.back() == '\n') root_id.pop_back();
  if (root_id.empty()) Fail(1, state.string() + ": no root id");
  Durable d;
  Walk(state, root_id, "", 0, &d);

  // What the cut changes, file by file.
  std::map<std::string, uintmax_t> now;
  for (auto it = fs::recursive_directory_iterator(root);
       it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_regular_file()) {
      now[fs::relative(it->path(), root).string()] = it->file_size();
    }
  }
  uintmax_t dropped = 0, kept_bytes = 0;
  int cut_files = 0, gone = 0, back = 0;
  for (const auto& [rel, size] : now) {
    auto it = d.files.find(rel);
    if (it == d.files.end()) {
      std::printf("  %s: gone (%ju bytes)\n", rel.c_str(), size);
      dropped += size;
      ++gone;
      continue;
    }
    const uintmax_t durable = fs::file_size(it->second);
    if (durable != size) {
      std::printf("  %s: %ju -> %ju bytes\n", rel.c_str(), size, durable);
      if (durable < size) {
        dropped += size - durable;
        ++cut_files;
      }
    }
  }
  for (const auto& [rel, blob] : d.files) {
    kept_bytes += fs::file_size(blob);
    if (now.count(rel) == 0) {
      std::printf("  %s: back (a removal never synced)\n", rel.c_str());
      ++back;
    }
  }

  // The cut: the tree becomes the durable state (files as hard links to the
  // blobs, so files that shared an inode still do).
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    fs::remove_all(e.path());
  }
  for (const std::string& dir : d.dirs) fs::create_directories(root / dir);
  for (const auto& [rel, blob] : d.files) {
    fs::create_hard_link(blob, root / rel, ec);
    if (ec) fs::copy_file(blob, root / rel);
  }
  std::map<std::string, std::string> stats;
  std::istringstream lines(ReadFile(state / crashfs::kStatsFile));
  for (std::string k, v; lines >> k >> v;) stats[k] = v;
  fs::remove_all(state);
  std::printf(
      "crashfs: %s: %zu files kept (%ju bytes); cut: %ju bytes dropped from "
      "%d files, %d files gone, %d names back; %s file syncs, %s directory "
      "syncs seen\n",
      root.c_str(), d.files.size(), kept_bytes, dropped, cut_files, gone, back,
      stats["file_syncs"].c_str(), stats["dir_syncs"].c_str());
  return 0;
}
