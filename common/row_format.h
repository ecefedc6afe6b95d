// Row formats: how a table row stores its embedding v
// (sparse_table.h TableOptions::row_format), and how a pull sends it
// (common/ps_wire.h).
//
// A row is a run of 32-bit words (sparse_table/accessor.h). FP32 keeps one
// float per weight; FP16 packs two IEEE half floats in a word; INT8 keeps a
// float32 scale then four signed bytes per word, v[i] = q[i] * scale with scale
// = max|v| / 127, so the largest weight is exact. Only the accessor reads the
// packed words: everything else (the hot tier, RocksDB values, delta files,
// shard moves) copies words without looking at them.
//
// Rounding happens once per update: the weights are decoded to float32,
// updated there, and encoded. kNearest rounds to the nearest code (ties to
// even; INT8's ties go up); kStochastic rounds up with probability equal to the
// distance from the code below, so an update smaller than half a step still
// moves the weight in expectation. The random numbers come from a caller's seed
// (the accessor derives it from the key and the row's statistics), so replaying
// the same pushes on the same rows gives the same words: a recovered table
// equals one that never crashed.
//
// Stateless functions; thread-safe.
#ifndef SAMPAN_COMMON_ROW_FORMAT_H_
#define SAMPAN_COMMON_ROW_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace sampan {

// How a row stores its embedding v (TableOptions::row_format); w, the
// statistics and the optimizer state stay float32.
enum class RowFormat { kFp32, kFp16, kInt8 };
// How a compact format rounds an updated weight.
enum class Rounding { kStochastic, kNearest };

// "FP32", "FP16" or "INT8".
const char* RowFormatName(RowFormat format);
// The format a name spells, in any case ("int8", "INT8"); nullopt for
// anything else. The one parser of the tools' --row_format flags.
std::optional<RowFormat> ParseRowFormat(std::string_view name);

// Words the embedding of n weights takes: FP32 n, FP16 ceil(n / 2), INT8
// 1 + ceil(n / 4).
uint32_t EmbeddingWords(RowFormat format, uint32_t n);

// Writes EmbeddingWords(format, n) words for v[0..n). Finite weights only;
// FP16 saturates at +-65504. Padding bits are zero.
void EncodeEmbedding(RowFormat format, Rounding rounding, uint64_t seed,
                     const float* v, uint32_t n, float* words);
// The weights those words hold.
void DecodeEmbedding(RowFormat format, const float* words, uint32_t n,
                     float* v);

// IEEE 754 binary16. `u` in [0, 1) decides a stochastic rounding.
uint16_t FloatToHalf(float f, Rounding rounding, float u);
float HalfToFloat(uint16_t h);

}  // namespace sampan

#endif  // SAMPAN_COMMON_ROW_FORMAT_H_
