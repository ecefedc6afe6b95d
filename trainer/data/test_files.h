// Test helpers of trainer/data: data files in the test's temporary
// directory, plain or gzip, and Criteo lines built from their fields.
#ifndef SAMPAN_TRAINER_DATA_TEST_FILES_H_
#define SAMPAN_TRAINER_DATA_TEST_FILES_H_

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/data/formats.h"
#include "zlib.h"

namespace sampan {
namespace test {

// `name` under $TEST_TMPDIR (or /tmp).
inline std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// Writes `contents` to `path` byte for byte.
inline void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
  ASSERT_TRUE(out.good()) << path;
}

// Writes `contents` gzipped to `path`.
inline void WriteGzip(const std::string& path, const std::string& contents) {
  gzFile gz = gzopen(path.c_str(), "wb");
  ASSERT_NE(gz, nullptr) << path;
  ASSERT_EQ(gzwrite(gz, contents.data(), contents.size()),
            static_cast<int>(contents.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

// A 40-field labeled Criteo line (no newline): label, 13 integer fields, 26
// categorical fields; missing fields are empty.
inline std::string MakeCriteoLine(const std::string& label,
                                  std::vector<std::string> ints,
                                  std::vector<std::string> cats) {
  ints.resize(kCriteoIntFields);
  cats.resize(kCriteoCatFields);
  std::string line = label;
  for (const auto& f : ints) line += "\t" + f;
  for (const auto& f : cats) line += "\t" + f;
  return line;
}

}  // namespace test
}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_TEST_FILES_H_
