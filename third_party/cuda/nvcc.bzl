"""Compiles CUDA sources with the toolkit's nvcc into an object for cc_library.

Bazel's C++ rules know nothing of .cu files; a genrule runs nvcc instead.
Code is built for Hopper (sm_90 machine code) plus compute_90 PTX, so newer
GPUs can JIT it. Without the toolkit (HAS_CUDA false) it defines nothing,
so callers list the object only under HAS_CUDA.
"""

load("@local_cuda//:defs.bzl", "CUDA_PATH", "HAS_CUDA")

def cuda_object(name, src, hdrs = []):
    """Writes `name`.pic.o from `src`, for a cc_library's srcs."""
    if not HAS_CUDA:
        return
    native.genrule(
        name = name + "_nvcc",
        srcs = [src] + hdrs,
        outs = [name + ".pic.o"],
        cmd = " ".join([
            CUDA_PATH + "/bin/nvcc",
            "-std=c++17",
            "-O3",
            "-gencode=arch=compute_90,code=sm_90",
            "-gencode=arch=compute_90,code=compute_90",
            "-Xcompiler=-fPIC",
            "-I.",
            "-c $(location " + src + ")",
            "-o $@",
        ]),
    )
