#!/usr/bin/env bash
# Builds Gantry's container image (the Dockerfile at the root) on the engine at DOCKER_HOST, as CI
# does: no registry is reachable here, so the official `node` image the Dockerfile defaults to is
# stood in for by bases made of Debian packages and this machine's Node.js (.ci/build-rootfs.sh
# --variant node and node-build), and the build reaches the npm registry over this machine's
# network (--network host) with its npm configuration (carried by those bases).
#
#   .ci/build-image.sh [TAG]     default tag gantry-test/gantry:ci; prints the image's size
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${1:-gantry-test/gantry:ci}
docker=(docker)
[ -n "${DOCKER_HOST:-}" ] && docker=(docker --host "$DOCKER_HOST")

.ci/build-rootfs.sh --import --variant node --variant node-build > /dev/null
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
started=$(date +%s)
DOCKER_BUILDKIT=0 "${docker[@]}" build --network host \
  --build-arg NODE_IMAGE=gantry-test/node:1 \
  --build-arg BUILD_IMAGE=gantry-test/node-build:1 \
  --build-arg GANTRY_BUILD_COMMIT="$commit" \
  -t "$TAG" . > /tmp/gantry-image-build.log 2>&1 || { tail -n 60 /tmp/gantry-image-build.log; echo "building the image failed" >&2; exit 1; }
size=$("${docker[@]}" image inspect "$TAG" --format '{{.Size}}')
echo "== image $TAG: $(( size / 1000000 )) MB, built in $(( $(date +%s) - started )) s"
