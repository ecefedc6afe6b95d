// libcrashfs.so's libc wrappers: each calls the next definition (libc's)
// and tells the model (interposer.h) what changed. Wrapped: every libc
// entry point RocksDB, the redo log and libstdc++'s filesystem use to
// create, write, size, sync, rename or remove files (strace of a pserver
// under load: openat, write, writev, pwrite, fallocate with KEEP_SIZE,
// ftruncate, fdatasync, fsync of files and directories, sync_file_range,
// link, rename, unlink, mkdir), and their 64-bit, fortified and *at
// variants. link and mkdir need none: a directory's entries are read when
// it is synced.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "tests/crashfs/interposer.h"

using namespace crashfs::internal;  // NOLINT: the wrappers are the glue

extern "C" {

// --- Opening and closing ---------------------------------------------------

#define CRASHFS_OPEN(name, ...)                   \
  int name(const char* path, int flags, ...) {    \
    va_list ap;                                   \
    va_start(ap, flags);                          \
    const int mode = OpenFlagsMode(flags, ap);    \
    va_end(ap);                                   \
    const int fd = REAL(name)(path, flags, mode); \
    OnOpen(fd, flags);                            \
    return fd;                                    \
  }
CRASHFS_OPEN(open)
CRASHFS_OPEN(open64)

#define CRASHFS_OPENAT(name)                              \
  int name(int dirfd, const char* path, int flags, ...) { \
    va_list ap;                                           \
    va_start(ap, flags);                                  \
    const int mode = OpenFlagsMode(flags, ap);            \
    va_end(ap);                                           \
    const int fd = REAL(name)(dirfd, path, flags, mode);  \
    OnOpen(fd, flags);                                    \
    return fd;                                            \
  }
CRASHFS_OPENAT(openat)
CRASHFS_OPENAT(openat64)

int __open_2(const char* path, int flags) {
  const int fd = REAL(__open_2)(path, flags);
  OnOpen(fd, flags);
  return fd;
}
int __open64_2(const char* path, int flags) {
  const int fd = REAL(__open64_2)(path, flags);
  OnOpen(fd, flags);
  return fd;
}
int __openat_2(int dirfd, const char* path, int flags) {
  const int fd = REAL(__openat_2)(dirfd, path, flags);
  OnOpen(fd, flags);
  return fd;
}
int __openat64_2(int dirfd, const char* path, int flags) {
  const int fd = REAL(__openat64_2)(dirfd, path, flags);
  OnOpen(fd, flags);
  return fd;
}
int creat(const char* path, mode_t mode) {
  const int fd = REAL(creat)(path, mode);
  OnOpen(fd, O_WRONLY | O_CREAT | O_TRUNC);
  return fd;
}
int creat64(const char* path, mode_t mode) {
  const int fd = REAL(creat64)(path, mode);
  OnOpen(fd, O_WRONLY | O_CREAT | O_TRUNC);
  return fd;
}

int close(int fd) {
  Untrack(fd);
  return REAL(close)(fd);
}

int dup(int fd) {
  const int to = REAL(dup)(fd);
  OnDup(fd, to);
  return to;
}
int dup2(int fd, int to) {
  if (fd != to) Untrack(to);
  const int rc = REAL(dup2)(fd, to);
  if (fd != to) OnDup(fd, rc);
  return rc;
}
int dup3(int fd, int to, int flags) {
  Untrack(to);
  const int rc = REAL(dup3)(fd, to, flags);
  OnDup(fd, rc);
  return rc;
}

#define CRASHFS_FCNTL(name)                                              \
  int name(int fd, int cmd, ...) {                                       \
    va_list ap;                                                          \
    va_start(ap, cmd);                                                   \
    void* arg = va_arg(ap, void*);                                       \
    va_end(ap);                                                          \
    const int rc = REAL(name)(fd, cmd, arg);                             \
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) OnDup(fd, rc);         \
    if (cmd == F_SETFL && Tracked(fd) &&                                 \
        (reinterpret_cast<intptr_t>(arg) & O_DSYNC)) {                   \
      Die("fcntl(F_SETFL, O_DSYNC) on descriptor %d: not modelled", fd); \
    }                                                                    \
    return rc;                                                           \
  }
CRASHFS_FCNTL(fcntl)
CRASHFS_FCNTL(fcntl64)

// --- Writes ----------------------------------------------------------------

ssize_t write(int fd, const void* buf, size_t n) {
  const ssize_t rc = REAL(write)(fd, buf, n);
  if (rc > 0 && Tracked(fd)) OnChange(fd, WrittenAt(fd, rc), false);
  return rc;
}
ssize_t writev(int fd, const struct iovec* iov, int count) {
  const ssize_t rc = REAL(writev)(fd, iov, count);
  if (rc > 0 && Tracked(fd)) OnChange(fd, WrittenAt(fd, rc), false);
  return rc;
}
// Each call and its 64-bit twin (the same on 64-bit Linux but for the
// offset type's name) are one macro.
#define CRASHFS_PWRITE(name, off_type)                            \
  ssize_t name(int fd, const void* buf, size_t n, off_type off) { \
    const ssize_t rc = REAL(name)(fd, buf, n, off);               \
    if (rc > 0 && Tracked(fd)) OnChange(fd, off, false);          \
    return rc;                                                    \
  }
CRASHFS_PWRITE(pwrite, off_t)
CRASHFS_PWRITE(pwrite64, off64_t)

#define CRASHFS_PWRITEV(name, off_type)                                    \
  ssize_t name(int fd, const struct iovec* iov, int count, off_type off) { \
    const ssize_t rc = REAL(name)(fd, iov, count, off);                    \
    if (rc > 0 && Tracked(fd)) OnChange(fd, off, false);                   \
    return rc;                                                             \
  }
CRASHFS_PWRITEV(pwritev, off_t)
CRASHFS_PWRITEV(pwritev64, off64_t)

// Offset -1: at the file position. RWF_SYNC / RWF_DSYNC: synchronous.
#define CRASHFS_PWRITEV2(name, off_type)                                 \
  ssize_t name(int fd, const struct iovec* iov, int count, off_type off, \
               int flags) {                                              \
    const ssize_t rc = REAL(name)(fd, iov, count, off, flags);           \
    if (rc > 0 && Tracked(fd)) {                                         \
      OnChange(fd, off == -1 ? WrittenAt(fd, rc) : uint64_t(off),        \
               (flags & (RWF_DSYNC | RWF_SYNC)) != 0);                   \
    }                                                                    \
    return rc;                                                           \
  }
CRASHFS_PWRITEV2(pwritev2, off_t)
CRASHFS_PWRITEV2(pwritev64v2, off64_t)

// Copies into a file: noted as a change from its start (never used by
// what this models, so not worth the offsets).
ssize_t copy_file_range(int in, off64_t* in_off, int out, off64_t* out_off,
                        size_t n, unsigned int flags) {
  const ssize_t rc = REAL(copy_file_range)(in, in_off, out, out_off, n, flags);
  if (rc > 0 && Tracked(out)) OnChange(out, 0, false);
  return rc;
}
#define CRASHFS_SENDFILE(name, off_type)                   \
  ssize_t name(int out, int in, off_type* off, size_t n) { \
    const ssize_t rc = REAL(name)(out, in, off, n);        \
    if (rc > 0 && Tracked(out)) OnChange(out, 0, false);   \
    return rc;                                             \
  }
CRASHFS_SENDFILE(sendfile, off_t)
CRASHFS_SENDFILE(sendfile64, off64_t)

// A size change alters the bytes from the smaller of the two sizes on.
#define CRASHFS_FTRUNCATE(name, off_type)                \
  int name(int fd, off_type len) {                       \
    const uint64_t was = Tracked(fd) ? SizeOf(fd) : 0;   \
    const int rc = REAL(name)(fd, len);                  \
    if (rc == 0 && Tracked(fd)) {                        \
      OnChange(fd, std::min<uint64_t>(was, len), false); \
    }                                                    \
    return rc;                                           \
  }
CRASHFS_FTRUNCATE(ftruncate, off_t)
CRASHFS_FTRUNCATE(ftruncate64, off64_t)

// By name: open it for the change, so that it is noted like one through a
// descriptor.
static int TruncateByName(const char* path, off64_t len,
                          int (*real)(const char*, off64_t)) {
  if (!Active()) return real(path, len);
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return real(path, len);
  const int rc = ftruncate64(fd, len);
  const int saved = errno;
  close(fd);
  errno = saved;
  return rc;
}
int truncate(const char* path, off_t len) {
  return TruncateByName(
      path, len, [](const char* p, off64_t l) { return REAL(truncate)(p, l); });
}
int truncate64(const char* path, off64_t len) {
  return TruncateByName(path, len, [](const char* p, off64_t l) {
    return REAL(truncate64)(p, l);
  });
}

// Preallocation with FALLOC_FL_KEEP_SIZE changes no byte a reader sees;
// anything else may, from `off` or the old end on.
#define CRASHFS_FALLOCATE(name, off_type)                        \
  int name(int fd, int mode, off_type off, off_type len) {       \
    const uint64_t was = Tracked(fd) ? SizeOf(fd) : 0;           \
    const int rc = REAL(name)(fd, mode, off, len);               \
    if (rc == 0 && Tracked(fd) && mode != FALLOC_FL_KEEP_SIZE) { \
      OnChange(fd, std::min<uint64_t>(was, off), false);         \
    }                                                            \
    return rc;                                                   \
  }
CRASHFS_FALLOCATE(fallocate, off_t)
CRASHFS_FALLOCATE(fallocate64, off64_t)

#define CRASHFS_POSIX_FALLOCATE(name, off_type)          \
  int name(int fd, off_type off, off_type len) {         \
    const uint64_t was = Tracked(fd) ? SizeOf(fd) : 0;   \
    const int rc = REAL(name)(fd, off, len);             \
    if (rc == 0 && Tracked(fd)) {                        \
      OnChange(fd, std::min<uint64_t>(was, off), false); \
    }                                                    \
    return rc;                                           \
  }
CRASHFS_POSIX_FALLOCATE(posix_fallocate, off_t)
CRASHFS_POSIX_FALLOCATE(posix_fallocate64, off64_t)

#define CRASHFS_MMAP(name, off_type)                                       \
  void* name(void* addr, size_t len, int prot, int flags, int fd,          \
             off_type off) {                                               \
    if ((flags & MAP_SHARED) && (prot & PROT_WRITE) && Tracked(fd)) {      \
      Die("shared writable mmap of %s: not modelled", FdPath(fd).c_str()); \
    }                                                                      \
    return REAL(name)(addr, len, prot, flags, fd, off);                    \
  }
CRASHFS_MMAP(mmap, off_t)
CRASHFS_MMAP(mmap64, off64_t)

// --- Syncs -----------------------------------------------------------------

int fsync(int fd) { return OnSync(fd, REAL(fsync)(fd)); }
int fdatasync(int fd) { return OnSync(fd, REAL(fdatasync)(fd)); }

int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
  NoteRangeSync(fd);
  return REAL(sync_file_range)(fd, off, n, flags);
}

void sync() {
  REAL(sync)();
  SyncEverything();
}
int syncfs(int fd) {
  const int rc = REAL(syncfs)(fd);
  if (rc == 0) SyncEverything();
  return rc;
}

// --- Names -----------------------------------------------------------------

int unlink(const char* path) {
  return RemoveName(AT_FDCWD, path, [&] { return REAL(unlink)(path); });
}
int unlinkat(int dirfd, const char* path, int flags) {
  return RemoveName(dirfd, path,
                    [&] { return REAL(unlinkat)(dirfd, path, flags); });
}
int rmdir(const char* path) {
  return RemoveName(AT_FDCWD, path, [&] { return REAL(rmdir)(path); });
}
int remove(const char* path) {
  return RemoveName(AT_FDCWD, path, [&] { return REAL(remove)(path); });
}
int rename(const char* from, const char* to) {
  return RenameTo(AT_FDCWD, to, AT_FDCWD, from, false,
                  [&] { return REAL(rename)(from, to); });
}
int renameat(int fromfd, const char* from, int tofd, const char* to) {
  return RenameTo(tofd, to, fromfd, from, false,
                  [&] { return REAL(renameat)(fromfd, from, tofd, to); });
}
int renameat2(int fromfd, const char* from, int tofd, const char* to,
              unsigned int flags) {
  return RenameTo(tofd, to, fromfd, from, (flags & RENAME_EXCHANGE) != 0, [&] {
    return REAL(renameat2)(fromfd, from, tofd, to, flags);
  });
}

}  // extern "C"
