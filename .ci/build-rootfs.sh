#!/usr/bin/env bash
# The Debian root filesystem the Docker tests' images are made from (no registry is reachable
# here: images are built from Debian packages and imported), built once and cached.
#
#   .ci/build-rootfs.sh            build the root filesystem (or find it in the cache), print its tar
#   .ci/build-rootfs.sh --import   the same, then import it into the engine at DOCKER_HOST as
#                                  gantry-test/sshd:1 (unless that image is already this build)
#   --variant V                    which root filesystem: sshd (the default), node, node-build or
#                                  postgres or prometheus; repeated, each in turn. node and node-build are Node.js bases
#                                  for the project's own image (Dockerfile, .ci/build-image.sh),
#                                  standing in for the official `node` image no registry here
#                                  serves: gantry-test/node:1 (the final stage's base: ca-certificates,
#                                  iptables, tini) and gantry-test/node-build:1 (the build stage's:
#                                  python3, make, g++ and Node's headers for native addons). Both
#                                  carry this machine's Node.js and npm, and its CA certificates and
#                                  global npm configuration, so that `npm ci` in a build reaches the
#                                  npm registry the way this machine does. postgres is
#                                  gantry-test/postgres:ci, Debian's postgresql-15 with an entrypoint
#                                  doing what the official `postgres` image does for
#                                  deploy/compose.yaml (POSTGRES_USER, _DB, _PASSWORD; see
#                                  postgres_entrypoint below). prometheus is
#                                  gantry-test/prometheus:ci, Debian's prometheus laid out as the
#                                  official image (/bin/prometheus, user nobody, /prometheus). No
#                                  Grafana: Debian does not package it. CI-only images.
#
# GANTRY_ROOTFS_CACHE: where the tar (and debootstrap's downloaded packages) are kept
#   (default ${XDG_CACHE_HOME:-~/.cache}/gantry-rootfs). A tar is named after a hash of this
#   script, so changing the recipe below builds anew and an unchanged one is reused; later image
#   work builds on the same tar. GANTRY_DEBIAN_MIRROR: the mirror (default deb.debian.org).
#
# What is in it: Debian bookworm (`debootstrap --variant=minbase`) with openssh-server and curl
# (the start command dstack sends installs curl when it is missing, which needs a network the
# test pods do not have), and /start.sh, the image's command, doing what RunPod's images do when
# a pod starts: /run/sshd and fresh host keys, PUBLIC_KEY (the env startSsh injects) into root's
# authorized_keys, then sshd in the foreground. No host key is baked in. pam_loginuid is optional
# (a container may not write its login uid). Needs root (debootstrap), debootstrap and tar.
set -euo pipefail

SCRIPT="$(readlink -f "$0")"
SUITE=bookworm
MIRROR=${GANTRY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${GANTRY_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry-rootfs}

mode=build
VARIANTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --import) mode=import ;;
    --variant) VARIANTS+=("${2:-}"); shift ;;
    *) echo "usage: $0 [--import] [--variant sshd|node|node-build|postgres|prometheus]..." >&2; exit 2 ;;
  esac
  shift
done
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(sshd)

# The variant built next: its packages, image, cache key and tar.
select_variant() {
  VARIANT=$1
  NODE_KEY=""
  IMAGE_CHANGES=()
  case "$VARIANT" in
    sshd) PACKAGES=openssh-server,curl; IMAGE=gantry-test/sshd:1; IMAGE_CMD='["/start.sh"]' ;;
    node) PACKAGES=ca-certificates,iptables,tini; IMAGE=gantry-test/node:1; IMAGE_CMD='["node"]' ;;
    node-build) PACKAGES=ca-certificates,python3,make,g++; IMAGE=gantry-test/node-build:1; IMAGE_CMD='["node"]' ;;
    postgres)
      PACKAGES=postgresql-15; IMAGE=gantry-test/postgres:ci; IMAGE_CMD='["postgres"]'
      # as the official image: its entrypoint, data directory and port (not its STOPSIGNAL SIGINT,
      # which `docker import` cannot set: a stop is SIGTERM, PostgreSQL's smart shutdown)
      IMAGE_CHANGES=('ENTRYPOINT ["docker-entrypoint.sh"]' 'ENV PGDATA=/var/lib/postgresql/data'
        'VOLUME /var/lib/postgresql/data' 'EXPOSE 5432') ;;
    prometheus)
      PACKAGES=prometheus; IMAGE=gantry-test/prometheus:ci
      IMAGE_CMD='["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]'
      IMAGE_CHANGES=('ENTRYPOINT ["/bin/prometheus"]' 'USER nobody' 'WORKDIR /prometheus' 'VOLUME /prometheus'
        'EXPOSE 9090') ;;
    *) echo "unknown variant: $VARIANT (sshd, node, node-build, postgres or prometheus)" >&2; exit 2 ;;
  esac
  # A Node.js variant is rebuilt when this machine's Node.js changes.
  case "$VARIANT" in node | node-build) NODE_KEY="$(node -v) $(npm -v)" ;; esac
  KEY=$( { sha256sum < "$SCRIPT"; echo "$VARIANT $NODE_KEY"; } | sha256sum | cut -c1-16)
  TAR="$CACHE/debian-$SUITE-$VARIANT-$KEY.tar"
}

BUILD_DIR=""
BUILD_PID=""

# What a build leaves when it fails or is stopped: debootstrap's process group, what it mounted in
# the target (proc, sys), the half-made tree and tar.
cleanup() {
  if [ -n "$BUILD_PID" ] && kill -0 "$BUILD_PID" 2>/dev/null; then
    kill -TERM -- "-$BUILD_PID" 2>/dev/null || true
    wait "$BUILD_PID" 2>/dev/null || true
  fi
  if [ -n "$BUILD_DIR" ]; then
    awk -v d="$BUILD_DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rm -rf "$BUILD_DIR" "$TAR.partial"
  fi
}

# The image's command (/start.sh).
start_script() {
  cat <<'SCRIPT'
#!/bin/sh
# A pod's start, as RunPod's images do it: sshd's run directory and this container's own host keys,
# the keys startSsh gives (PUBLIC_KEY) into root's authorized_keys, then sshd in the foreground.
set -e
mkdir -p /run/sshd
chmod 0755 /run/sshd
ssh-keygen -A
if [ -n "${PUBLIC_KEY:-}" ]; then
  mkdir -p /root/.ssh
  chmod 700 /root/.ssh
  printf '%s\n' "$PUBLIC_KEY" >> /root/.ssh/authorized_keys
  chmod 600 /root/.ssh/authorized_keys
fi
echo "start.sh: sshd starting"
exec /usr/sbin/sshd -D -e
SCRIPT
}

# The postgres image's entrypoint (docker-entrypoint.sh), what the official image's does for
# deploy/compose.yaml: as root it makes PGDATA the postgres user's and runs itself again as that
# user; on an empty PGDATA, initdb with POSTGRES_USER (default postgres) as the superuser and
# POSTGRES_PASSWORD as its password (required), password authentication (scram-sha-256) for every
# TCP client, and POSTGRES_DB (default the user's name) created on a server listening on its socket
# only; then postgres in the foreground (exec: the engine's signals reach it) on every address.
# Any other command runs as given.
postgres_entrypoint() {
  cat <<'SCRIPT'
#!/bin/sh
set -eu
case "${1:-}" in -*) set -- postgres "$@" ;; "") set -- postgres ;; esac
[ "${1:-}" = postgres ] || exec "$@"
shift
PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "docker-entrypoint.sh: the database is uninitialized and POSTGRES_PASSWORD is not set" >&2
    exit 1
  fi
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256
  rm -f "$pwfile"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
    printf 'CREATE DATABASE :"db";\n' | psql -v ON_ERROR_STOP=1 -v db="$db" --username="$user" --dbname=postgres -q
    pg_ctl -D "$PGDATA" -m fast -w stop
  fi
  echo "docker-entrypoint.sh: initialized $PGDATA (user $user, database $db)"
fi
exec postgres -c listen_addresses='*' "$@"
SCRIPT
}

# This machine's Node.js and npm (and, for the build stage, Node's headers) into the tree, with the
# machine's CA certificates and global npm configuration: what `npm ci` needs to reach the registry
# from a build here. The official image's layout: node on PATH, npm beside it.
add_node() {
  local root=$1 node npm_dir prefix
  node=$(readlink -f "$(command -v node)")
  prefix=$(dirname "$(dirname "$node")")
  npm_dir="$prefix/lib/node_modules/npm"
  [ -d "$npm_dir" ] || { echo "npm is not at $npm_dir" >&2; return 1; }
  install -m 0755 "$node" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  if [ "$VARIANT" = node-build ]; then
    [ -f "$prefix/include/node/node.h" ] || { echo "Node's headers are not at $prefix/include/node" >&2; return 1; }
    mkdir -p "$root/usr/local/include"
    cp -a "$prefix/include/node" "$root/usr/local/include/node"
  fi
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$root/usr/local/etc"
  npm config ls -g --json 2>/dev/null | node -e '
    const c = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const keep = ["registry", "cafile", "strict-ssl", "proxy", "https-proxy", "noproxy"];
    const lines = keep.filter((k) => c[k] !== undefined && c[k] !== null && c[k] !== "").map((k) => `${k}=${c[k]}`);
    process.stdout.write(lines.join("\n") + "\n");' > "$root/usr/local/etc/npmrc"
  # node-gyp builds against the headers copied above, not ones it would download
  [ "$VARIANT" = node-build ] && echo "nodedir=/usr/local" >> "$root/usr/local/etc/npmrc"
  return 0
}

# One of debootstrap's stages, in a session of its own; its log is shown when it fails.
run_stage() {
  setsid "$@" >> "$BUILD_DIR/debootstrap.log" 2>&1 &
  BUILD_PID=$!
  if ! wait "$BUILD_PID"; then
    BUILD_PID=""
    tail -n 30 "$BUILD_DIR/debootstrap.log" >&2
    [ -f "$BUILD_DIR/root/debootstrap/debootstrap.log" ] && tail -n 30 "$BUILD_DIR/root/debootstrap/debootstrap.log" >&2
    echo "debootstrap failed: $*" >&2
    return 1
  fi
  BUILD_PID=""
}

build() {
  if [ -f "$TAR" ]; then
    echo "== root filesystem: $TAR (cached)" >&2
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || { echo "building the root filesystem needs root (debootstrap)" >&2; return 1; }
  command -v debootstrap >/dev/null 2>&1 || { echo "debootstrap is not installed: apt-get install debootstrap" >&2; return 1; }
  mkdir -p "$CACHE/debs"
  local started root
  started=$(date +%s)
  BUILD_DIR=$(mktemp -d "$CACHE/build-XXXX")
  root="$BUILD_DIR/root"
  echo "== debootstrap $SUITE ($PACKAGES) from $MIRROR" >&2
  # Two stages: the packages unpacked, then (in the chroot) installed, with dpkg told not to sync
  # each file to disk, which is most of the time a build takes (the tree is tarred at the end).
  # Each in a session of its own, so that a stop (CI gave up) takes its chroot's dpkg along.
  run_stage debootstrap --foreign --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE/debs" \
    "$SUITE" "$root" "$MIRROR" || return 1
  echo force-unsafe-io > "$root/etc/dpkg/dpkg.cfg.d/gantry-build"
  run_stage chroot "$root" /debootstrap/debootstrap --second-stage || return 1
  rm -f "$root/etc/dpkg/dpkg.cfg.d/gantry-build"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  if [ "$VARIANT" = postgres ]; then
    # the package's own cluster (made by its postinst) is not used: the entrypoint makes PGDATA's
    rm -rf "$root"/etc/postgresql/15 "$root"/var/lib/postgresql/15
    mkdir -p "$root/var/lib/postgresql/data"
    chroot "$root" chown postgres:postgres /var/lib/postgresql/data
    chmod 0700 "$root/var/lib/postgresql/data"
    # initdb, pg_ctl, postgres, psql and pg_isready on PATH, as the official image has them
    for tool in "$root"/usr/lib/postgresql/15/bin/*; do ln -sf "/usr/lib/postgresql/15/bin/${tool##*/}" "$root/usr/local/bin/"; done
    postgres_entrypoint > "$root/usr/local/bin/docker-entrypoint.sh"
    chmod 0755 "$root/usr/local/bin/docker-entrypoint.sh"
  fi
  if [ "$VARIANT" = prometheus ]; then
    # the official image's data directory (a volume takes its owner), writable by nobody
    mkdir -p "$root/prometheus"
    chown 65534:65534 "$root/prometheus"
    # 227 of its 389 MB: every tz release's data for the old web console's date pickers
    rm -rf "$root/usr/share/javascript/moment-timezone/data"
  fi
  if [ "$VARIANT" = sshd ]; then
    # Every container makes its own host keys at start (start.sh); none is shared through the image.
    rm -f "$root"/etc/ssh/ssh_host_*
    sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' "$root/etc/pam.d/sshd"
    start_script > "$root/start.sh"
    chmod 0755 "$root/start.sh"
  else
    # as Debian's slim images: no translations, manuals or documents (nor later installs' ones)
    rm -rf "$root"/usr/share/locale/* "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
    printf 'path-exclude /usr/share/locale/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/doc/*\npath-exclude /usr/share/info/*\n' \
      > "$root/etc/dpkg/dpkg.cfg.d/slim"
    case "$VARIANT" in node | node-build) add_node "$root" ;; esac
  fi
  tar -C "$root" -c --numeric-owner -f "$TAR.partial" .
  mv "$TAR.partial" "$TAR"
  rm -rf "$BUILD_DIR"
  BUILD_DIR=""
  # Older builds of the recipe are left to nobody.
  find "$CACHE" -maxdepth 1 -name "debian-$SUITE-$VARIANT-*.tar" ! -name "$(basename "$TAR")" -delete
  echo "== root filesystem: $TAR ($(du -m "$TAR" | cut -f1) MB, built in $(( $(date +%s) - started )) s)" >&2
}

import() {
  local docker=(docker)
  [ -n "${DOCKER_HOST:-}" ] && docker=(docker --host "$DOCKER_HOST")
  local have
  have=$("${docker[@]}" image inspect "$IMAGE" --format '{{index .Config.Labels "gantry.rootfs"}}' 2>/dev/null || true)
  if [ "$have" = "$KEY" ]; then
    echo "== image $IMAGE: this build ($KEY) is in the engine" >&2
    return 0
  fi
  local changes=(--change "LABEL gantry.rootfs=$KEY" --change "CMD $IMAGE_CMD") change
  for change in "${IMAGE_CHANGES[@]}"; do changes+=(--change "$change"); done
  "${docker[@]}" import "${changes[@]}" "$TAR" "$IMAGE" >/dev/null
  echo "== image $IMAGE imported (build $KEY)" >&2
}

trap cleanup EXIT
trap 'exit 143' TERM INT
mkdir -p "$CACHE"
# One build at a time per cache (a second caller waits, then finds it built).
exec 9> "$CACHE/.lock"
flock 9
for v in "${VARIANTS[@]}"; do
  select_variant "$v"
  build
  [ "$mode" = import ] && import
  echo "$TAR"
done
