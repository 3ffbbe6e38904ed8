# A Docker Engine for the docker runtime's tests, sourced by .ci/run.
#
# docker_engine_start: reuses an engine that already answers (DOCKER_HOST, else the default
#   socket); otherwise installs docker.io when dockerd is missing and starts a daemon of its own,
#   in the background, under a short temp dir (the exec root's socket paths have length limits).
#   When another daemon already owns the default bridge docker0, ours gets a bridge of its own, so
#   the two never share one. GANTRY_CI_DOCKER=own starts our own even when one answers (to test
#   this script next to a running engine); =reuse never starts one.
# docker_engine_wait: waits until it answers (printing its log if it does not), exports DOCKER_HOST.
# docker_engine_stop: stops what docker_engine_start started; safe to call twice (an EXIT trap).

GD_DIR=""
GD_BRIDGE=""
GD_STARTED_AT=0

docker_answers() {
  # `docker version` exits 0 only when the server part answered too.
  timeout 10 docker --host "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1
}

docker_engine_install() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  # Test images are a root filesystem of a static busybox.
  dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing ${missing[*]}"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } > /tmp/gantry-apt.log 2>&1; then
    cat /tmp/gantry-apt.log
    echo "installing ${missing[*]} failed" >&2
    return 1
  fi
}

docker_engine_start() {
  GD_STARTED_AT=$(date +%s)
  local mode="${GANTRY_CI_DOCKER:-auto}"
  docker_engine_install
  if [ "$mode" != own ]; then
    for candidate in ${DOCKER_HOST:-} unix:///var/run/docker.sock; do
      if docker_answers "$candidate"; then
        echo "== reusing the Docker Engine at $candidate"
        export DOCKER_HOST="$candidate"
        return 0
      fi
    done
    if [ "$mode" = reuse ]; then
      echo "no Docker Engine answers at ${DOCKER_HOST:-unix:///var/run/docker.sock}" >&2
      return 1
    fi
  fi
  GD_DIR=$(mktemp -d /tmp/gd-XXXX)
  local bridge_flags=()
  if ip link show docker0 >/dev/null 2>&1; then
    # Another daemon's bridge: take a /24 of our own that no route uses yet.
    GD_BRIDGE="gd${GD_DIR##*-}"
    local n subnet=""
    for n in $(seq $(( $$ % 200 + 20 )) 254) $(seq 20 254); do
      if ! ip route | grep -q "^10\.213\.$n\.0/24 "; then subnet="10.213.$n"; break; fi
    done
    [ -n "$subnet" ] || { echo "no free 10.213.x.0/24 for the CI engine's bridge" >&2; return 1; }
    ip link add "$GD_BRIDGE" type bridge
    ip addr add "$subnet.1/24" dev "$GD_BRIDGE"
    ip link set "$GD_BRIDGE" up
    bridge_flags=(--bridge "$GD_BRIDGE")
  fi
  echo "== starting a Docker Engine at unix://$GD_DIR/docker.sock${GD_BRIDGE:+ (bridge $GD_BRIDGE)}"
  dockerd --data-root "$GD_DIR/root" --exec-root "$GD_DIR/exec" --host "unix://$GD_DIR/docker.sock" \
    --pidfile "$GD_DIR/dockerd.pid" --iptables=false --ip-masq=false --ip6tables=false --shutdown-timeout 2 "${bridge_flags[@]}" \
    > "$GD_DIR/dockerd.log" 2>&1 &
  echo $! > "$GD_DIR/dockerd.launched"
  export DOCKER_HOST="unix://$GD_DIR/docker.sock"
}

docker_engine_wait() {
  local deadline=$(( $(date +%s) + 60 ))
  until docker_answers "$DOCKER_HOST"; do
    if [ -n "$GD_DIR" ] && ! kill -0 "$(cat "$GD_DIR/dockerd.launched")" 2>/dev/null; then
      echo "the Docker Engine exited while starting; its log:" >&2
      cat "$GD_DIR/dockerd.log" >&2
      return 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "the Docker Engine at $DOCKER_HOST did not answer within 60 s${GD_DIR:+; its log:}" >&2
      [ -n "$GD_DIR" ] && cat "$GD_DIR/dockerd.log" >&2
      return 1
    fi
    sleep 0.5
  done
  echo "== Docker Engine $(docker --host "$DOCKER_HOST" version --format '{{.Server.Version}}') at $DOCKER_HOST ($(( $(date +%s) - GD_STARTED_AT )) s)"
}

docker_engine_stop() {
  [ -n "$GD_DIR" ] || return 0
  local dir="$GD_DIR"
  GD_DIR=""
  local pid
  pid=$(cat "$dir/dockerd.launched" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    # SIGTERM: dockerd stops its containers and its containerd, and unmounts what it mounted.
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "the CI Docker Engine did not stop within 30 s; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      # Its containerd outlives a killed dockerd.
      local cpid
      cpid=$(cat "$dir/exec/containerd/containerd.pid" 2>/dev/null || true)
      [ -n "$cpid" ] && kill -KILL "$cpid" 2>/dev/null || true
    fi
  fi
  # Anything still mounted under the dir (a daemon that was killed) goes before the dir does.
  awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  if [ -n "$GD_BRIDGE" ]; then ip link delete "$GD_BRIDGE" 2>/dev/null || true; GD_BRIDGE=""; fi
  rm -rf "$dir"
}
