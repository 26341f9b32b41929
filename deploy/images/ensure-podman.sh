#!/usr/bin/env bash
# Installs what building and running the images with podman needs, from Debian's packages:
# podman with runc (deploy/images/containers.conf selects it), netavark and aardvark-dns (the
# compose network and its service names), podman-compose, and mmdebstrap (the local
# debian:bookworm-slim). Nothing is installed when everything is there.
set -euo pipefail
need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
[ -x /usr/lib/podman/netavark ] || command -v netavark >/dev/null || need+=(netavark)
[ -x /usr/lib/podman/aardvark-dns ] || command -v aardvark-dns >/dev/null || need+=(aardvark-dns)
command -v podman-compose >/dev/null || need+=(podman-compose)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "[images] missing ${need[*]}: install them (Debian: apt-get install ${need[*]}) and retry" >&2
  exit 1
fi
echo "[images] installing ${need[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
{ apt-get install -y -qq --no-install-recommends "${need[@]}" catatonit uidmap slirp4netns containernetworking-plugins \
  || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" catatonit uidmap slirp4netns containernetworking-plugins; }; } >/dev/null
