// Feature signs and shard routing.
//
// A feature sign names one feature value of one slot as a 64-bit key. Signs
// are persisted in tables and checkpoints, so FeatureSign() is a frozen
// contract: the same (slot, bytes) maps to the same sign on every platform and
// in every release. Its definition, for other languages to reproduce:
//
//   h = 0xcbf29ce484222325 ^ (slot * 0x9e3779b97f4a7c15)      (mod 2^64)
//   for each byte b of raw: h = (h ^ b) * 0x100000001b3       (FNV-1a)
//   sign = fmix64(h)                  (MurmurHash3's 64-bit finalizer)
//
// ShardOf() spreads signs over a table's fixed number of shards with a second,
// independent mixer (SplitMix64's finalizer), so shard balance does not depend
// on how well the raw values were spread.
#ifndef SAMPAN_COMMON_HASH_H_
#define SAMPAN_COMMON_HASH_H_

#include <cstdint>
#include <string_view>

namespace sampan {

// MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
inline uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// SplitMix64's finalizer, used for routing only.
inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// The sign of raw value `raw` in feature slot `slot`. Stable forever.
inline uint64_t FeatureSign(uint32_t slot, std::string_view raw) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t{slot} * 0x9e3779b97f4a7c15ULL);
  for (unsigned char c : raw) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return Fmix64(h);
}

// The shard of `sign` in a table of `num_shards` shards (num_shards > 0).
inline uint32_t ShardOf(uint64_t sign, uint32_t num_shards) {
  return static_cast<uint32_t>(Mix64(sign) % num_shards);
}

// The shard map: pserver p of n owns every shard s with s % n == p. Scaling
// out moves whole shards; clients and servers must agree on this function.
inline uint32_t PserverOfShard(uint32_t shard, uint32_t num_pservers) {
  return shard % num_pservers;
}

}  // namespace sampan

#endif  // SAMPAN_COMMON_HASH_H_
