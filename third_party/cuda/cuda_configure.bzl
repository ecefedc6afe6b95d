"""Detects the CUDA toolkit (with NCCL) so GPU code builds only where it exists.

Writes @local_cuda with:
  defs.bzl   HAS_CUDA (bool) and CUDA_PATH
  :cuda      cudart + nccl headers and libraries, or an empty library without CUDA
  :cublas    cuBLAS (with :cuda), or an empty library without CUDA
"""

def _cuda_configure_impl(ctx):
    cuda_path = ctx.os.environ.get("CUDA_PATH", "/usr/local/cuda")
    has_cuda = (ctx.path(cuda_path + "/bin/nvcc").exists and
                ctx.path(cuda_path + "/include/nccl.h").exists)
    ctx.file("defs.bzl", "HAS_CUDA = %s\nCUDA_PATH = \"%s\"\n" % (has_cuda, cuda_path))
    if has_cuda:
        ctx.symlink(cuda_path + "/include", "include")
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "cuda",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp"]),
    includes = ["include"],
    linkopts = ["-L{p}/lib64", "-Wl,-rpath,{p}/lib64", "-lcudart", "-lnccl"],
)
cc_library(
    name = "cublas",
    linkopts = ["-L{p}/lib64", "-lcublas"],
    deps = [":cuda"],
)
""".format(p = cuda_path))
    else:
        ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
cc_library(name = "cuda")
cc_library(name = "cublas")
""")

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
