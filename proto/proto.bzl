"""cc libraries from .proto files with Debian's protoc and grpc_cpp_plugin.

Bazel 4's native proto_library wants @com_google_protobuf, which an offline
build cannot fetch, so a genrule runs the system compiler instead. Generated
headers are included as "proto/<name>.pb.h".
"""

def sampan_cc_proto(name, src, grpc = False, deps = []):
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]
    cmd = "/usr/bin/protoc -I. --cpp_out=$(GENDIR) "
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
        cmd += ("--grpc_out=$(GENDIR) " +
                "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin ")
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = outs,
        cmd = cmd + "$(location " + src + ")",
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party:protobuf"] + (["//third_party:grpc"] if grpc else []),
        visibility = ["//visibility:public"],
    )
