"""Compiler options shared by every target that includes Eigen here."""

# x86-64-v3 (AVX2 + FMA): the dense layers' GEMMs run 2-4x faster with it.
DENSE_COPTS = [
    "-O3",
    "-mavx2",
    "-mfma",
]
