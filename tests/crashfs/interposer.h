// Between libcrashfs.so's two halves: the libc wrappers (crashfs_calls.cc)
// report what they did to the model (crashfs.cc), which keeps the durable
// state (crashfs.h). Every function here may be called from any thread, and
// before the model is set up (then it does nothing); none may be called
// with the model's lock held.
#ifndef SAMPAN_TESTS_CRASHFS_INTERPOSER_H_
#define SAMPAN_TESTS_CRASHFS_INTERPOSER_H_

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include <functional>
#include <string>

extern "C" {
// glibc's _FORTIFY_SOURCE entry points of open(2), not in its headers.
int __open_2(const char*, int);
int __open64_2(const char*, int);
int __openat_2(int, const char*, int);
int __openat64_2(int, const char*, int);
}

namespace crashfs {
namespace internal {

// The next definition of `name` after this library (libc's, or a
// sanitizer's in front of it); aborts if there is none.
void* Next(const char* name);
// The next definition of the libc function `fn`, looked up once.
#define REAL(fn)                                                         \
  ([]() {                                                                \
    static auto* p =                                                     \
        reinterpret_cast<decltype(&fn)>(::crashfs::internal::Next(#fn)); \
    return p;                                                            \
  }())

// True when the model is set up and the calling thread is not inside the
// library.
bool Active();
// True when `fd` is a file or directory of the tree and the calling thread
// is not inside the library.
bool Tracked(int fd);

// After open(2) and its kin returned `fd` (any; those outside the tree are
// ignored) for `flags`.
void OnOpen(int fd, int flags);
// Before `fd` is closed or replaced.
void Untrack(int fd);
// After `to` became a duplicate of `from`.
void OnDup(int from, int to);
// After the bytes of tracked `fd` from `off` on changed (some of them);
// `sync`: the write was synchronous (RWF_SYNC / RWF_DSYNC).
void OnChange(int fd, uint64_t off, bool sync);
// The offset a write(2) or writev(2) of `n` bytes on `fd` just wrote at.
uint64_t WrittenAt(int fd, ssize_t n);
// The size of the file open as `fd` (0 if unknown).
uint64_t SizeOf(int fd);
// After fsync(2) or fdatasync(2) of `fd` returned `rc`: records the file's
// content, or the directory's entries, as durable. Returns `rc`.
int OnSync(int fd, int rc);
// sync_file_range(2) on `fd`: counted, not durability.
void NoteRangeSync(int fd);
// sync(2), syncfs(2): everything in the tree is durable.
void SyncEverything();
// Runs `op`, which removes the name `path` (from `dirfd`): unlink, rmdir,
// remove. Returns its result with errno kept.
int RemoveName(int dirfd, const char* path, const std::function<int()>& op);
// Runs `op`, which renames onto `newpath` (from `newdirfd`), replacing
// what is there unless `exchange`. Returns its result with errno kept.
int RenameTo(int newdirfd, const char* newpath, int olddirfd,
             const char* oldpath, bool exchange,
             const std::function<int()>& op);
// The mode argument of open(2) given `flags` (0 when there is none).
int OpenFlagsMode(int flags, va_list ap);
// Prints "crashfs: <message>" and aborts: for what the model cannot follow.
[[noreturn]] void Die(const char* fmt, ...);
// The path the kernel has for `fd` ("" when it has none).
std::string FdPath(int fd);

}  // namespace internal
}  // namespace crashfs

#endif  // SAMPAN_TESTS_CRASHFS_INTERPOSER_H_
