// CRC-32C (Castagnoli), the checksum of the redo log's records: the SSE4.2
// instruction where the CPU has it, a table otherwise; both give the same
// value. Masked as LevelDB masks it, so a CRC stored inside checksummed data
// does not checksum to a constant.
#ifndef SAMPAN_SPARSE_TABLE_CRC32C_H_
#define SAMPAN_SPARSE_TABLE_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace sampan {
namespace crc32c {

// The CRC of data[0, n) appended to data whose CRC was `crc`.
uint32_t Extend(uint32_t crc, const void* data, size_t n);
// The same, always by table (what Extend uses without SSE4.2); for tests.
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

inline uint32_t Mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace crc32c
}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_CRC32C_H_
