// crashfs: what a power cut would leave of a directory tree, for tests.
//
// libcrashfs.so, loaded into one process with LD_PRELOAD, keeps beside the
// tree CRASHFS_ROOT the state that tree would be in if the machine lost
// power at this instant, under the rules POSIX promises and a careful
// program must assume (the page cache, which a SIGKILL keeps, is lost):
//   - a file's data and length are durable as of its last fsync or
//     fdatasync (every write, for O_SYNC/O_DSYNC descriptors and
//     RWF_SYNC/RWF_DSYNC writes); sync_file_range and msync are not
//     durability and count for nothing;
//   - a directory's entries (names of files and subdirectories) are durable
//     as of the directory's last fsync: a created, renamed, linked or
//     deleted name is undone until then, and a file whose name never became
//     durable is gone, however often the file itself was fsynced;
//   - everything in the tree when the process started is durable.
// Nothing else is: no write-back in the background, no journal ordering
// (ext4 and XFS often persist more, never less). The one outcome modelled
// is the harshest one, where every unsynced byte and name is lost.
//
// After the process is SIGKILLed, crashfs_rewind replaces the tree by that
// state: the test's power cut. It prints what was dropped.
//
// Environment of the process (without CRASHFS_ROOT the library does
// nothing):
//   CRASHFS_ROOT    the directory to model (must exist)
//   CRASHFS_STATE   where the state is kept, outside the root and not
//                   existing yet (the library refuses to reuse one)
//   CRASHFS_VERIFY  1: compare every synced file in full with what was
//                   recorded (slow; checks the interposer itself)
//
// Not modelled, so the library aborts naming the file instead of guessing:
// shared writable mmaps of a file in the tree; file types other than
// regular files and directories. Writes through stdio are seen only when the
// file is fsynced (then it is copied in full). Writes that bypass libc's
// wrappers (raw syscall(2), io_uring, a static binary) and a second process
// writing the tree are not seen; CRASHFS_VERIFY catches a recorded copy
// that differs from the file it was synced from. A forked child stops
// recording; a program it executes with the same environment finds the
// state taken and aborts, so the process must not start others so.
//
// The state directory (one process's; crashfs_rewind consumes it):
//   owner              the pid of the process
//   root               the id of the root directory
//   stats              counters: "file_syncs N" and so on, one per line
//   blobs/<id>         the durable content of one file (an inode)
//   dirs/<id>/<name>   the durable entries of one directory: a file is a
//                      hard link to its blob, a subdirectory a symbolic link
//                      whose target is the subdirectory's id
#ifndef SAMPAN_TESTS_CRASHFS_CRASHFS_H_
#define SAMPAN_TESTS_CRASHFS_CRASHFS_H_

namespace crashfs {

constexpr char kOwnerFile[] = "owner";
constexpr char kRootFile[] = "root";
constexpr char kStatsFile[] = "stats";
constexpr char kBlobsDir[] = "blobs";
constexpr char kDirsDir[] = "dirs";
// Names in dirs/<id>/ starting with this are the library's own.
constexpr char kTempPrefix[] = ".crashfs~";

}  // namespace crashfs

#endif  // SAMPAN_TESTS_CRASHFS_CRASHFS_H_
