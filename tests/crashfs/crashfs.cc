// libcrashfs.so's model (crashfs.h says what it models). The libc wrappers
// (crashfs_calls.cc: open, write and its kin, truncate, fallocate, the
// syncs, unlink, rename) report to it through interposer.h. It keeps, per
// inode of the tree, a blob with the content as of its last sync and, per
// directory, its entries as of its last sync. Writes only note the lowest
// offset they changed since the inode's last sync, so an fsync copies the
// changed tail, not the file. Calls made inside libc (stdio's own opens
// and writes) are not seen; a file written that way counts as new and
// unsynced until an fsync, which then copies it whole.
//
// Thread safety: one mutex (g_mu) guards the model; a write to a
// descriptor outside the tree costs one atomic load.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tests/crashfs/crashfs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/crashfs/interposer.h"

namespace crashfs {
namespace internal {

void* Next(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr) {
    fprintf(stderr, "crashfs: no next definition of %s\n", name);
    abort();
  }
  return p;
}

namespace {

constexpr int kMaxFds = 1 << 16;
constexpr uint64_t kClean = UINT64_MAX;  // no change since the last sync

struct FdInfo {
  bool dir = false;
  bool sync_each = false;  // O_SYNC / O_DSYNC
  dev_t dev = 0;
  ino_t ino = 0;
  std::string path;
};

// A file or directory of the tree, by inode, from the moment it is first
// seen until its last name is removed (so a reused inode number is a new
// node).
struct Node {
  uint64_t id = 0;
  bool dir = false;
  uint64_t lo = 0;  // files: lowest offset changed since the last sync
};

struct Stats {
  uint64_t file_syncs = 0, dir_syncs = 0, bytes_copied = 0;
  uint64_t full_copies = 0, sync_writes = 0, ignored_range_syncs = 0;
  uint64_t forgotten = 0;
};

std::atomic<bool> g_active{false};
std::atomic<bool> g_tracked[kMaxFds];
thread_local int t_depth = 0;  // > 0 inside the library's own calls

std::mutex g_mu;
// Guarded by g_mu (set up once by Init before g_active).
FdInfo* g_fds = nullptr;
std::map<std::pair<dev_t, ino_t>, Node>* g_nodes = nullptr;
std::string* g_root = nullptr;
std::string* g_state = nullptr;
uint64_t g_next_id = 0;
bool g_verify = false;
Stats g_stats;

struct Busy {
  Busy() { ++t_depth; }
  ~Busy() { --t_depth; }
};

bool UnderRoot(const std::string& p) {
  const std::string& r = *g_root;
  return p == r || (p.size() > r.size() && p.compare(0, r.size(), r) == 0 &&
                    p[r.size()] == '/');
}

// `path` as seen from `dirfd`, with its directory resolved (symbolic links
// and all) and its last component as given.
std::string Resolve(int dirfd, const char* path) {
  std::string full;
  if (path[0] == '/') {
    full = path;
  } else {
    char cwd[PATH_MAX];
    const std::string base =
        dirfd == AT_FDCWD
            ? std::string(getcwd(cwd, sizeof cwd) != nullptr ? cwd : "")
            : FdPath(dirfd);
    full = base + "/" + path;
  }
  while (full.size() > 1 && full.back() == '/') full.pop_back();
  const size_t slash = full.rfind('/');
  const std::string parent = slash == 0 ? "/" : full.substr(0, slash);
  char real[PATH_MAX];
  if (realpath(parent.c_str(), real) == nullptr) return full;
  const std::string last = full.substr(slash + 1);
  if (last == "." || last == "..") {
    return realpath(full.c_str(), real) != nullptr ? real : full;
  }
  return std::string(real) + (std::string(real) == "/" ? "" : "/") + last;
}

std::string StatePath(const std::string& rel) { return *g_state + "/" + rel; }
std::string BlobPath(uint64_t id) {
  return StatePath(std::string(crashfs::kBlobsDir) + "/" + std::to_string(id));
}
std::string DirStatePath(uint64_t id) {
  return StatePath(std::string(crashfs::kDirsDir) + "/" + std::to_string(id));
}

// The node of an inode; a new one (everything unsynced) if it is not known
// or was known as the other kind.
Node& NodeOf(dev_t dev, ino_t ino, bool dir) {
  auto [it, added] = g_nodes->try_emplace({dev, ino});
  if (added || it->second.dir != dir) {
    it->second = Node{++g_next_id, dir, 0};
  }
  return it->second;
}

// Called after a name of `st`'s inode was removed: if it was the last, the
// inode number may come back as another file.
void Forget(const struct stat& st) {
  if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) return;
  if (g_nodes->erase({st.st_dev, st.st_ino}) > 0) ++g_stats.forgotten;
}

void WriteStats() {
  char buf[512];
  const int n = snprintf(
      buf, sizeof buf,
      "file_syncs %llu\ndir_syncs %llu\nbytes_copied %llu\nfull_copies "
      "%llu\nsync_writes %llu\nignored_range_syncs %llu\nforgotten %llu\n",
      (unsigned long long)g_stats.file_syncs,
      (unsigned long long)g_stats.dir_syncs,
      (unsigned long long)g_stats.bytes_copied,
      (unsigned long long)g_stats.full_copies,
      (unsigned long long)g_stats.sync_writes,
      (unsigned long long)g_stats.ignored_range_syncs,
      (unsigned long long)g_stats.forgotten);
  const std::string path = StatePath(crashfs::kStatsFile);
  const int fd = REAL(open)(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) Die("open %s: %s", path.c_str(), strerror(errno));
  if (REAL(pwrite)(fd, buf, n, 0) != n) Die("write %s", path.c_str());
  REAL(ftruncate)(fd, n);
  REAL(close)(fd);
}

void CopyRange(int src, int dst, uint64_t from, uint64_t to,
               const std::string& what) {
  static char buf[1 << 20];  // under g_mu
  while (from < to) {
    const size_t want = std::min<uint64_t>(sizeof buf, to - from);
    const ssize_t n = pread(src, buf, want, from);
    if (n <= 0)
      Die("read %s at %llu: %s", what.c_str(), (unsigned long long)from,
          n == 0 ? "end of file" : strerror(errno));
    if (REAL(pwrite)(dst, buf, n, from) != n)
      Die("write blob of %s", what.c_str());
    from += n;
    g_stats.bytes_copied += n;
  }
}

void VerifyBlob(int src, int dst, uint64_t size, const std::string& what) {
  std::vector<char> a(1 << 16), b(1 << 16);
  for (uint64_t at = 0; at < size; at += a.size()) {
    const size_t want = std::min<uint64_t>(a.size(), size - at);
    if (pread(src, a.data(), want, at) != ssize_t(want) ||
        pread(dst, b.data(), want, at) != ssize_t(want) ||
        memcmp(a.data(), b.data(), want) != 0) {
      Die("CRASHFS_VERIFY: the synced copy of %s differs at %llu..%llu",
          what.c_str(), (unsigned long long)at,
          (unsigned long long)(at + want));
    }
  }
}

// Records the content of the file open as `src` (a read-only descriptor)
// as durable. `full`: its changes were not all seen.
void SyncFileLocked(int src, const std::string& what, bool full) {
  struct stat st;
  if (fstat(src, &st) != 0) Die("fstat %s: %s", what.c_str(), strerror(errno));
  Node& n = NodeOf(st.st_dev, st.st_ino, false);
  const std::string blob = BlobPath(n.id);
  const int dst = REAL(open)(blob.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (dst < 0) Die("open %s: %s", blob.c_str(), strerror(errno));
  struct stat bst;
  fstat(dst, &bst);
  const uint64_t size = st.st_size;
  uint64_t lo = full ? 0 : n.lo;
  if (lo == kClean && uint64_t(bst.st_size) != size) {
    lo = 0;  // changed in a way no wrapper saw (stdio)
  }
  if (lo == 0) ++g_stats.full_copies;
  if (lo != kClean) {
    CopyRange(src, dst, std::min(lo, size), size, what);
    if (REAL(ftruncate)(dst, size) != 0)
      Die("truncate blob of %s", what.c_str());
  }
  if (g_verify) VerifyBlob(src, dst, size, what);
  REAL(close)(dst);
  n.lo = kClean;
  ++g_stats.file_syncs;
}

void SyncFdLocked(int fd, const std::string& what, bool full) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const int src = REAL(open)(link, O_RDONLY | O_CLOEXEC);
  if (src < 0) Die("reopen %s: %s", what.c_str(), strerror(errno));
  SyncFileLocked(src, what, full);
  REAL(close)(src);
}

void MakeDir(const std::string& path) {
  if (REAL(mkdir)(path.c_str(), 0755) != 0 && errno != EEXIST) {
    Die("mkdir %s: %s", path.c_str(), strerror(errno));
  }
}

// Makes `dir`/`name` a hard link to `target` (kind 'f') or a symbolic link
// to it (kind 'd'), unless it is already.
void SetEntry(const std::string& dir, const std::string& name,
              const std::string& target, char kind) {
  const std::string path = dir + "/" + name;
  struct stat have, want;
  if (kind == 'f') {
    if (lstat(path.c_str(), &have) == 0 && S_ISREG(have.st_mode) &&
        stat(target.c_str(), &want) == 0 && have.st_ino == want.st_ino) {
      return;
    }
  } else {
    char buf[64];
    const ssize_t n = readlink(path.c_str(), buf, sizeof buf);
    if (n > 0 && std::string(buf, n) == target) return;
  }
  const std::string tmp = dir + "/" + crashfs::kTempPrefix + "new";
  REAL(unlink)(tmp.c_str());
  const int rc = kind == 'f' ? REAL(link)(target.c_str(), tmp.c_str())
                             : symlink(target.c_str(), tmp.c_str());
  if (rc != 0 || REAL(rename)(tmp.c_str(), path.c_str()) != 0) {
    Die("entry %s: %s", path.c_str(), strerror(errno));
  }
}

// Records the entries of the directory `path` as durable: files by their
// blob (empty until the file is synced), subdirectories by their id.
void SyncDirLocked(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0)
    Die("stat %s: %s", path.c_str(), strerror(errno));
  const Node& d = NodeOf(st.st_dev, st.st_ino, true);
  const std::string state = DirStatePath(d.id);
  MakeDir(state);
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) Die("opendir %s: %s", path.c_str(), strerror(errno));
  std::set<std::string> names;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat es;
    if (fstatat(dirfd(dir), e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(es.st_mode)) {
      const Node& f = NodeOf(es.st_dev, es.st_ino, false);
      const std::string blob = BlobPath(f.id);
      const int fd =
          REAL(open)(blob.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) Die("open %s: %s", blob.c_str(), strerror(errno));
      REAL(close)(fd);
      SetEntry(state, name, blob, 'f');
    } else if (S_ISDIR(es.st_mode)) {
      SetEntry(state, name,
               std::to_string(NodeOf(es.st_dev, es.st_ino, true).id), 'd');
    } else {
      Die("%s/%s: only regular files and directories are modelled",
          path.c_str(), e->d_name);
    }
    names.insert(name);
  }
  closedir(dir);
  DIR* old = opendir(state.c_str());
  std::vector<std::string> gone;
  while (const dirent* e = readdir(old)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && names.count(name) == 0)
      gone.push_back(name);
  }
  closedir(old);
  for (const std::string& name : gone)
    REAL(unlink)((state + "/" + name).c_str());
  ++g_stats.dir_syncs;
}

// Everything under `path` becomes durable (at start, and on sync()).
void SyncTreeLocked(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) Die("opendir %s: %s", path.c_str(), strerror(errno));
  std::vector<std::pair<std::string, bool>> children;
  while (const dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat es;
    if (fstatat(dirfd(dir), e->d_name, &es, AT_SYMLINK_NOFOLLOW) != 0) continue;
    children.emplace_back(path + "/" + name, S_ISDIR(es.st_mode));
  }
  closedir(dir);
  for (const auto& [child, is_dir] : children) {
    if (is_dir) {
      SyncTreeLocked(child);
      continue;
    }
    const int src =
        REAL(open)(child.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (src < 0) continue;  // not a regular file: SyncDirLocked says so
    SyncFileLocked(src, child, true);
    REAL(close)(src);
  }
  SyncDirLocked(path);
}

}  // namespace

bool Active() {
  return t_depth == 0 && g_active.load(std::memory_order_acquire);
}
bool Tracked(int fd) {
  return fd >= 0 && fd < kMaxFds &&
         g_tracked[fd].load(std::memory_order_acquire) && Active();
}

[[noreturn]] void Die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "crashfs: %s\n", msg);
  abort();
}

std::string FdPath(int fd) {
  char link[64], buf[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, buf, sizeof buf - 1);
  return n < 0 ? std::string() : std::string(buf, n);
}

// After a descriptor of the tree was opened.
void OnOpen(int fd, int flags) {
  if (fd < 0 || !Active()) return;
  const std::string path = FdPath(fd);
  if (!UnderRoot(path)) return;
  Busy busy;
  if (fd >= kMaxFds) Die("descriptor %d of %s: too high", fd, path.c_str());
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
    return;
  std::lock_guard<std::mutex> lock(g_mu);
  FdInfo& f = g_fds[fd];
  f.dir = S_ISDIR(st.st_mode);
  f.sync_each = (flags & O_DSYNC) != 0;
  f.dev = st.st_dev;
  f.ino = st.st_ino;
  f.path = path;
  if (!f.dir && (flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) {
    NodeOf(st.st_dev, st.st_ino, false).lo = 0;
  }
  g_tracked[fd].store(true, std::memory_order_release);
}

void Untrack(int fd) {
  if (fd < 0 || fd >= kMaxFds ||
      !g_tracked[fd].load(std::memory_order_acquire)) {
    return;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_tracked[fd].store(false, std::memory_order_release);
}

void OnDup(int from, int to) {
  if (to < 0 || !Tracked(from)) return;
  if (to >= kMaxFds) Die("descriptor %d: too high", to);
  std::lock_guard<std::mutex> lock(g_mu);
  g_fds[to] = g_fds[from];
  g_tracked[to].store(true, std::memory_order_release);
}

// After `n` bytes changed at `off` of the file open as `fd` (n < 0: from
// `off` to wherever), and a sync of it if it is written synchronously.
void OnChange(int fd, uint64_t off, bool sync) {
  Busy busy;
  std::lock_guard<std::mutex> lock(g_mu);
  const FdInfo& f = g_fds[fd];
  if (f.dir) return;
  Node& n = NodeOf(f.dev, f.ino, false);
  n.lo = std::min(n.lo, off);
  if (sync || f.sync_each) {
    ++g_stats.sync_writes;
    SyncFdLocked(fd, f.path, false);
    WriteStats();
  }
}

// The offset a write or writev of `n` bytes just wrote at.
uint64_t WrittenAt(int fd, ssize_t n) {
  const off_t pos = lseek(fd, 0, SEEK_CUR);
  return pos < 0 ? 0 : uint64_t(pos) - n;
}

uint64_t SizeOf(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_size : 0;
}

int OnSync(int fd, int rc) {
  if (rc != 0 || fd < 0 || !Active()) return rc;
  Busy busy;
  const bool tracked =
      fd < kMaxFds && g_tracked[fd].load(std::memory_order_acquire);
  std::string path;
  bool dir;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (tracked) {
      path = g_fds[fd].path;
      dir = g_fds[fd].dir;
    }
  }
  if (!tracked) {
    path = FdPath(fd);  // opened inside libc (stdio, opendir)
    struct stat st;
    if (!UnderRoot(path) || fstat(fd, &st) != 0) return rc;
    dir = S_ISDIR(st.st_mode);
    if (!dir && !S_ISREG(st.st_mode)) return rc;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (dir) {
    SyncDirLocked(path);
  } else {
    SyncFdLocked(fd, path, !tracked);
  }
  WriteStats();
  return rc;
}

// unlink, rmdir, rename over: `path` (under the root) loses a name.
struct Removal {
  bool had = false;
  struct stat st;
  explicit Removal(const std::string& path) {
    had = lstat(path.c_str(), &st) == 0;
  }
  void Done(int rc) {
    if (rc == 0 && had) Forget(st);
  }
};

int RemoveName(int dirfd, const char* path, const std::function<int()>& op) {
  if (!Active() || path == nullptr) return op();
  const std::string p = Resolve(dirfd, path);
  if (!UnderRoot(p)) return op();
  Busy busy;
  std::lock_guard<std::mutex> lock(g_mu);
  Removal r(p);
  const int rc = op();
  const int saved = errno;
  r.Done(rc);
  errno = saved;
  return rc;
}

int RenameTo(int newdirfd, const char* newpath, int olddirfd,
             const char* oldpath, bool exchange,
             const std::function<int()>& op) {
  if (!Active() || exchange) return op();
  const std::string to = Resolve(newdirfd, newpath);
  if (!UnderRoot(to)) return op();
  Busy busy;
  std::lock_guard<std::mutex> lock(g_mu);
  Removal r(to);
  struct stat from;
  if (r.had && lstat(Resolve(olddirfd, oldpath).c_str(), &from) == 0 &&
      from.st_ino == r.st.st_ino && from.st_dev == r.st.st_dev) {
    r.had = false;  // renaming a name onto another of the same file
  }
  const int rc = op();
  const int saved = errno;
  r.Done(rc);
  errno = saved;
  return rc;
}

void NoteRangeSync(int fd) {
  if (!Tracked(fd)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_stats.ignored_range_syncs;
}

void SyncEverything() {
  if (!Active()) return;
  Busy busy;
  std::lock_guard<std::mutex> lock(g_mu);
  SyncTreeLocked(*g_root);
  WriteStats();
}

namespace {

void Init() {
  const char* root = getenv("CRASHFS_ROOT");
  if (root == nullptr || root[0] == '\0') return;
  Busy busy;
  const char* state = getenv("CRASHFS_STATE");
  if (state == nullptr || state[0] != '/') {
    Die("CRASHFS_STATE must be an absolute path (CRASHFS_ROOT is %s)", root);
  }
  char real[PATH_MAX];
  if (realpath(root, real) == nullptr) {
    Die("CRASHFS_ROOT %s: %s", root, strerror(errno));
  }
  g_root = new std::string(real);
  g_state = new std::string(Resolve(AT_FDCWD, state));
  if (UnderRoot(*g_state)) Die("CRASHFS_STATE %s is inside the root", state);
  if (REAL(mkdir)(state, 0755) != 0) {
    Die("CRASHFS_STATE %s: %s (a state is used once: rewind or remove it)",
        state, strerror(errno));
  }
  MakeDir(StatePath(crashfs::kBlobsDir));
  MakeDir(StatePath(crashfs::kDirsDir));
  g_fds = new FdInfo[kMaxFds];
  g_nodes = new std::map<std::pair<dev_t, ino_t>, Node>();
  g_verify = getenv("CRASHFS_VERIFY") != nullptr &&
             strcmp(getenv("CRASHFS_VERIFY"), "1") == 0;
  std::lock_guard<std::mutex> lock(g_mu);
  SyncTreeLocked(*g_root);
  struct stat st;
  lstat(g_root->c_str(), &st);
  const std::string text[2] = {
      std::to_string(getpid()) + "\n",
      std::to_string(NodeOf(st.st_dev, st.st_ino, true).id) + "\n"};
  const char* files[2] = {crashfs::kOwnerFile, crashfs::kRootFile};
  for (int i = 0; i < 2; ++i) {
    const std::string path = StatePath(files[i]);
    FILE* f = fopen(path.c_str(), "w");
    if (f == nullptr || fputs(text[i].c_str(), f) < 0 || fclose(f) != 0) {
      Die("write %s", path.c_str());
    }
  }
  g_stats = Stats();
  WriteStats();
  // A forked child shares nothing with the model's bookkeeping.
  pthread_atfork(nullptr, nullptr, [] { g_active.store(false); });
  g_active.store(true, std::memory_order_release);
}

__attribute__((constructor)) void Start() { Init(); }

}  // namespace

int OpenFlagsMode(int flags, va_list ap) {
  const bool tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
  return (flags & O_CREAT) || tmpfile ? va_arg(ap, int) : 0;
}
}  // namespace internal
}  // namespace crashfs
