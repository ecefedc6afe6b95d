#!/usr/bin/env bash
# Makes what a job's kubernetes.tls_secret holds, for `sampan render
# --target=k8s`: a CA, a certificate for every name the job's clients dial
# and check (`sampan render JOB.yaml --target=tls-names`: the coordinator's
# Service, each pserver pod's DNS name, serving, <name>-metrics for scrapes,
# localhost) plus IP 127.0.0.1, its key, and a bearer token.
#
#   scripts/make-certs.sh JOB.yaml DIR [--days=N]
#
# writes DIR/ca.crt, ca.key (kept and reused when present, so certificates
# of several jobs can share a CA), tls.crt, tls.key and token (kept when
# present), then prints the kubectl command that creates the Secret. Keys
# and the token are mode 600; ca.key need not go anywhere near the cluster.
# The certificate serves both ends (extendedKeyUsage serverAuth and
# clientAuth), so cluster.security.mutual_tls works with it too.
# SAMPAN names the sampan binary (default: `sampan` on PATH, else
# bazel-bin/cli/sampan of this checkout).
set -euo pipefail

usage() { echo "usage: $0 JOB.yaml DIR [--days=N]" >&2; exit 2; }
[ $# -ge 2 ] || usage
job=$1 dir=$2 days=365
shift 2
for a in "$@"; do
  case "$a" in
    --days=*) days=${a#--days=} ;;
    *) usage ;;
  esac
done
[[ $days =~ ^[0-9]+$ ]] || usage
command -v openssl > /dev/null || { echo "error: openssl not found" >&2; exit 1; }
if [ -z "${SAMPAN:-}" ]; then
  SAMPAN=$(command -v sampan || echo "$(cd "$(dirname "$0")/.." && pwd)/bazel-bin/cli/sampan")
fi
[ -x "$SAMPAN" ] || { echo "error: no sampan binary at $SAMPAN (set SAMPAN)" >&2; exit 1; }

names=$("$SAMPAN" render "$job" --target=tls-names)  # exits 2 on a bad job
config=$("$SAMPAN" render "$job" --target=config)
field() {  # the kubernetes.<field> string of the resolved job
  sed -n "s/^  $1: \"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" <<< "$config" | head -1
}
secret=$(field tls_secret)
namespace=$(field namespace)
first=$(head -1 <<< "$names")

mkdir -p "$dir"
cd "$dir"
umask 077
if [ ! -s ca.crt ] || [ ! -s ca.key ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days "$days" -subj "/CN=sampan CA for ${first%-coordinator}" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.crt 2> /dev/null
  echo "made a CA: $dir/ca.crt"
fi
sans=$(sed 's/^/DNS:/' <<< "$names" | paste -sd, -),IP:127.0.0.1
cat > tls.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$sans
EXT
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=$first" -keyout tls.key -out tls.csr 2> /dev/null
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
  -days "$days" -extfile tls.ext -out tls.crt 2> /dev/null
rm -f tls.csr tls.ext
openssl verify -CAfile ca.crt tls.crt > /dev/null
[ -s token ] || openssl rand -hex 32 > token
chmod 600 ca.key tls.key token
chmod 644 ca.crt tls.crt
echo "made $dir/tls.crt for: $(tr '\n' ' ' <<< "$names")127.0.0.1"
echo "create the Secret the pods mount (kubernetes.tls_secret) with:"
echo "  kubectl create secret generic ${secret:-SECRET}${namespace:+ -n $namespace} \\"
echo "    --from-file=tls.crt=$PWD/tls.crt --from-file=tls.key=$PWD/tls.key \\"
echo "    --from-file=ca.crt=$PWD/ca.crt --from-file=token=$PWD/token"
