#!/usr/bin/env bash
# Build the raftstream container image from this checkout.
#
#   deploy/build-image.sh [TAG]        TAG defaults to raftstream:local
#
# 1. builds a static binary (CGO_ENABLED=0) into deploy/.build/raftstream;
# 2. builds deploy/Dockerfile (FROM scratch, nothing is pulled) with the
#    classic builder, so it works on daemons without BuildKit.
# DOCKER_HOST is honoured, as by every docker command.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag="${1:-raftstream:local}"

cd "$here/.."
mkdir -p "$here/.build"
echo "building static binary -> deploy/.build/raftstream"
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$here/.build/raftstream" ./cmd/raftstream

echo "building image $tag"
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$here"
docker image ls "$tag"
