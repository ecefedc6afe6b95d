#!/usr/bin/env bash
# Installs every Debian package Sampan needs to build, test and run its demo.
# Idempotent and non-interactive: packages already present are skipped, so a
# second run costs one dpkg query.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap
  build-essential
  clang
  libclang-rt-14-dev
  protobuf-compiler
  libprotobuf-dev
  protobuf-compiler-grpc
  libgrpc++-dev
  libabsl-dev
  librocksdb-dev
  rocksdb-tools
  libeigen3-dev
  libyaml-cpp-dev
  prometheus-cpp-dev
  libevent-dev
  libssl-dev
  libgtest-dev
  libgmock-dev
  libbenchmark-dev
  zlib1g-dev
  chromium
  libgloo-dev
  libopenmpi-dev
  openmpi-bin
  python3
  python3-grpcio
  python3-grpc-tools
  iperf3
  prometheus
  curl
  kubectl
  nodejs
  python3-yaml
  procps
  nftables
  iproute2
  util-linux
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm ships inside some nodejs builds (NodeSource); Debian's package only
# where it does not, since it conflicts with those builds.
command -v npm > /dev/null || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || echo "install-deps: apt-get update failed; trying the cached package lists"
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
