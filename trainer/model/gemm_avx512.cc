// The AVX-512 copy of the dense products (gemm.h), in a binary otherwise
// built for AVX2: gemm.cc calls it only where the CPU has AVX-512.
//
// Two rules keep AVX-512 code out of the rest of the program:
//  1. Only code defined after the target pragma below is compiled for
//     AVX-512, so every standard header Eigen uses is included first: a
//     function template or inline function of the standard library defined
//     inside the region would be compiled for AVX-512, and the linker keeps
//     one copy of such a function for the whole program.
//  2. Eigen is included under another namespace name (sampan_eigen_avx512),
//     so its templates instantiated here are not the AVX2 program's.
// gemm_avx512_symbols_test checks the result: no symbol defined here may be
// shared with other translation units except this copy's own.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <climits>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <istream>
#include <limits>
#include <new>
#include <ostream>
#include <sstream>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trainer/model/gemm_internal.h"

// Every function defined from here on is compiled for AVX-512 (GCC's
// target pragma; clang, which builds the fuzzers, has its own form).
#if defined(__clang__)
#pragma clang attribute push(                                               \
    __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")
#endif
// The pragmas change code generation, not the predefined macros by which
// Eigen picks its packet types: name the ISA to Eigen by hand.
#ifndef __AVX512F__
#define __AVX512F__ 1
#endif
#ifndef __AVX512DQ__
#define __AVX512DQ__ 1
#endif
#ifndef __AVX512VL__
#define __AVX512VL__ 1
#endif
#ifndef __AVX512BW__
#define __AVX512BW__ 1
#endif
#ifndef __AVX2__
#define __AVX2__ 1
#endif
#ifndef __AVX__
#define __AVX__ 1
#endif
#ifndef __FMA__
#define __FMA__ 1
#endif
// 64-byte alignment for this copy's own buffers; nothing Eigen allocates
// here crosses into the AVX2 program (the interface is raw pointers).
#undef EIGEN_MAX_ALIGN_BYTES
#define Eigen sampan_eigen_avx512
#include "Eigen/Core"

#define SAMPAN_GEMM_NAME GemmAvx512
#include "trainer/model/gemm_kernel.inc"

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
