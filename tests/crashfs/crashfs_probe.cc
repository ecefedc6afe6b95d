// crashfs_probe: the crashfs model (crashfs.h) case by case.
//   crashfs_probe write DIR   does each case's file operations in DIR (run
//                             under libcrashfs.so), then SIGKILLs itself
//   crashfs_probe check DIR   after crashfs_rewind: checks that each case
//                             left what a power cut leaves; exit 1 if not
// DIR must hold, before `write`, the files `setup` (the shell) makes:
//   pre1/old.txt "old", pre2/gone.txt "gone", pre3/t.txt "truncate-me",
//   pre4/tr.txt and pre4/tr2.txt "0123456789".
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string dir;
int failures = 0;

std::string At(const std::string& rel) { return dir + "/" + rel; }

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::perror(what.c_str());
    std::exit(1);
  }
}

int Open(const std::string& rel, int flags) {
  const int fd = open(At(rel).c_str(), flags | O_CLOEXEC, 0644);
  Check(fd >= 0, "open " + rel);
  return fd;
}
void Write(int fd, const std::string& s) {
  Check(write(fd, s.data(), s.size()) == ssize_t(s.size()), "write");
}
// A new file with `s`, fsynced (its name is not).
void Put(const std::string& rel, const std::string& s) {
  const int fd = Open(rel, O_WRONLY | O_CREAT | O_TRUNC);
  Write(fd, s);
  Check(fsync(fd) == 0, "fsync " + rel);
  close(fd);
}
void SyncDir(const std::string& rel) {
  const int fd = Open(rel, O_RDONLY | O_DIRECTORY);
  Check(fsync(fd) == 0, "fsync dir " + rel);
  close(fd);
}
void MkDir(const std::string& rel) {
  Check(mkdir(At(rel).c_str(), 0755) == 0, "mkdir " + rel);
}

void WriteCases() {
  for (int i = 1; i <= 15; ++i) MkDir("s" + std::to_string(i));
  SyncDir(".");

  // s1: an append after the last fdatasync is lost.
  int fd = Open("s1/a.log", O_WRONLY | O_CREAT | O_APPEND);
  Write(fd, "0123456789");
  Check(fdatasync(fd) == 0, "fdatasync");
  SyncDir("s1");
  Write(fd, "abcdef");

  // s2: a synced file whose name never was.
  Put("s2/b.dat", "bbb");

  // s3: a name synced, its data never.
  fd = Open("s3/c.dat", O_WRONLY | O_CREAT);
  Write(fd, "ccc");
  SyncDir("s3");

  // s4: write, fsync, rename over, fsync the directory: the new content.
  Put("s4/cur", "v1");
  SyncDir("s4");
  Put("s4/cur.tmp", "v2");
  Check(rename(At("s4/cur.tmp").c_str(), At("s4/cur").c_str()) == 0, "rename");
  SyncDir("s4");

  // s5: the same without the last directory fsync: the old content.
  Put("s5/cur", "v1");
  SyncDir("s5");
  Put("s5/cur.tmp", "v2");
  Check(rename(At("s5/cur.tmp").c_str(), At("s5/cur").c_str()) == 0, "rename");

  // s6: RocksDB's ingestion: a file written in a subdirectory, fsynced,
  // hard-linked into the parent, the parent fsynced, the first name gone.
  MkDir("s6/in");
  SyncDir("s6");
  Put("s6/in/x.sst", "sst");
  Check(link(At("s6/in/x.sst").c_str(), At("s6/000.sst").c_str()) == 0, "link");
  SyncDir("s6");
  Check(unlink(At("s6/in/x.sst").c_str()) == 0, "unlink");

  // s7: overwrites in place: unsynced ones lost, synced ones kept, a later
  // unsynced ftruncate lost.
  Put("s7/o.dat", "AAAAAAAA");
  Put("s7/o2.dat", "AAAAAAAA");
  SyncDir("s7");
  fd = Open("s7/o.dat", O_WRONLY);
  Check(pwrite(fd, "BB", 2, 2) == 2, "pwrite");
  const int fd2 = Open("s7/o2.dat", O_WRONLY);
  Check(pwrite(fd2, "BB", 2, 2) == 2, "pwrite");
  Check(fdatasync(fd2) == 0, "fdatasync");
  Check(ftruncate(fd2, 4) == 0, "ftruncate");

  // s8: O_DSYNC writes are durable without an fsync.
  fd = Open("s8/d.log", O_WRONLY | O_CREAT | O_DSYNC);
  Write(fd, "dsync");
  SyncDir("s8");

  // s9: stdio: flushed and fsynced is kept, flushed only is not.
  FILE* f = std::fopen(At("s9/f.txt").c_str(), "w");
  std::fputs("stdio", f);
  std::fflush(f);
  Check(fsync(fileno(f)) == 0, "fsync stdio");
  std::fclose(f);
  f = std::fopen(At("s9/g.txt").c_str(), "w");
  std::fputs("flushed", f);
  std::fclose(f);
  SyncDir("s9");

  // s10: an unlink not synced comes back; a synced one does not.
  Check(unlink(At("pre1/old.txt").c_str()) == 0, "unlink");
  Check(unlink(At("pre2/gone.txt").c_str()) == 0, "unlink");
  SyncDir("pre2");

  // s11: O_TRUNC and a write, not synced: the old content.
  fd = Open("pre3/t.txt", O_WRONLY | O_TRUNC);
  Write(fd, "x");

  // s12: a new subdirectory synced, its parent not: gone with its files.
  MkDir("s12/sub");
  Put("s12/sub/f", "n");
  SyncDir("s12/sub");
  // s13: the same with the parent synced: there.
  MkDir("s13/sub");
  Put("s13/sub/f", "n");
  SyncDir("s13/sub");
  SyncDir("s13");

  // s14: a file deleted (synced) and another created, never synced: empty,
  // nothing of the first (were the inode number reused, as ext4 may, the
  // library must not take it for the first file).
  Put("s14/r1", "one");
  SyncDir("s14");
  Check(unlink(At("s14/r1").c_str()) == 0, "unlink");
  SyncDir("s14");
  fd = Open("s14/r2", O_WRONLY | O_CREAT);
  Write(fd, "two");
  SyncDir("s14");

  // s15: truncate by name: lost unsynced, kept once the file is synced.
  Check(truncate(At("pre4/tr.txt").c_str(), 3) == 0, "truncate");
  Check(truncate(At("pre4/tr2.txt").c_str(), 3) == 0, "truncate");
  fd = Open("pre4/tr2.txt", O_RDONLY);
  Check(fdatasync(fd) == 0, "fdatasync");

  // RocksDB's MANIFEST: preallocated with KEEP_SIZE, appended, synced.
  fd = Open("s15/MANIFEST", O_WRONLY | O_CREAT);
  Check(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 << 20) == 0, "fallocate");
  Write(fd, "manifest");
  Check(fdatasync(fd) == 0, "fdatasync");
  Write(fd, "-more");
  SyncDir("s15");

  std::printf("wrote the cases; SIGKILL\n");
  std::fflush(stdout);
  raise(SIGKILL);
}

// "absent", or the file's content.
std::string Content(const std::string& rel) {
  struct stat st;
  if (stat(At(rel).c_str(), &st) != 0) return "absent";
  std::ifstream in(At(rel), std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return "\"" + s.str() + "\"";
}

void Expect(const std::string& rel, const std::string& want,
            const std::string& why) {
  const std::string got = Content(rel);
  const std::string w = want == "absent" ? want : "\"" + want + "\"";
  if (got == w) {
    std::printf("ok: %s is %s (%s)\n", rel.c_str(), got.c_str(), why.c_str());
  } else {
    std::printf("FAIL: %s is %s, want %s (%s)\n", rel.c_str(), got.c_str(),
                w.c_str(), why.c_str());
    ++failures;
  }
}

void CheckCases() {
  Expect("s1/a.log", "0123456789", "append after the last fdatasync lost");
  Expect("s2/b.dat", "absent", "fsynced file, directory never synced");
  Expect("s3/c.dat", "", "name synced, data never");
  Expect("s4/cur", "v2", "rename over, both synced");
  Expect("s4/cur.tmp", "absent", "rename over, both synced");
  Expect("s5/cur", "v1", "rename over, directory not synced");
  Expect("s5/cur.tmp", "absent", "new name never synced");
  Expect("s6/000.sst", "sst", "hard link synced");
  Expect("s6/in/x.sst", "absent", "its first name never synced");
  Expect("s7/o.dat", "AAAAAAAA", "overwrite not synced");
  Expect("s7/o2.dat", "AABBAAAA", "overwrite synced, truncate not");
  Expect("s8/d.log", "dsync", "O_DSYNC write");
  Expect("s9/f.txt", "stdio", "stdio, fflush and fsync");
  Expect("s9/g.txt", "", "stdio, fflush only");
  Expect("pre1/old.txt", "old", "unlink not synced");
  Expect("pre2/gone.txt", "absent", "unlink synced");
  Expect("pre3/t.txt", "truncate-me", "O_TRUNC not synced");
  Expect("s12/sub/f", "absent", "new directory, parent not synced");
  Expect("s13/sub/f", "n", "new directory, parent synced");
  Expect("s14/r1", "absent", "unlink synced");
  Expect("s14/r2", "", "new file on a freed inode, never synced");
  Expect("pre4/tr.txt", "0123456789", "truncate by name not synced");
  Expect("pre4/tr2.txt", "012", "truncate by name, then fdatasync");
  Expect("s15/MANIFEST", "manifest", "preallocated, appended, synced");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: crashfs_probe write|check DIR\n");
    return 2;
  }
  dir = argv[2];
  if (std::strcmp(argv[1], "write") == 0) {
    WriteCases();
    return 1;  // not reached
  }
  CheckCases();
  std::printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
