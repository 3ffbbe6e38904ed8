/**
 * The agent's install script, `GET /agent/v1/install.sh` (docs/deploy.md, "Fleet: the one-line
 * join"): POSIX sh, written for the control plane that serves it (its public URL and the
 * checksums of the executables it has are written in). On the host, as root, it downloads the
 * agent's single executable from that URL, checks its SHA-256, creates the `gantry-agent` system
 * user in the `docker` group, installs `/usr/local/bin/gantry-agent`, writes
 * `/etc/gantry/agent.env` and the systemd unit of docs/fleet.md, and starts it; once the agent has
 * joined, the token is taken out of the environment file. Run again, it upgrades: the executable
 * is replaced and the unit restarted (the containers keep running; the agent adopts them), the
 * settings of the first run kept unless given anew. `--no-systemd` (or GANTRY_INSTALL_MODE=foreground)
 * installs the same files, then runs the agent in the foreground as the unit would (its user, its
 * group, CAP_NET_ADMIN), for a host without systemd.
 */
import type { AgentBinary } from './agent-downloads.js';

/** A word for sh, single-quoted. */
const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export function installScript(options: { server: string; binaries: AgentBinary[]; version: string }): string {
  const sums = options.binaries.map((b) => `    ${b.arch}) SUM=${quote(b.sha256)} ;;`).join('\n');
  return `#!/bin/sh
# Installs or upgrades the Gantry agent (${options.version}) on this host, from the control plane at
# ${options.server} (docs/deploy.md, "Fleet: the one-line join"). As root:
#   curl -fsSL ${options.server}/agent/v1/install.sh | sudo sh -s -- --token gjt_...
# Options (each is kept in /etc/gantry/agent.env for the next run, an upgrade):
#   --token T          a join token (gantry hosts token create): first join only
#   --public-ip IP     the address clients reach this host's pods at (default: the address this host
#                      reaches the control plane from)
#   --name NAME        the host's name (default: its hostname)
#   --docker-host H    the Docker Engine (default unix:///var/run/docker.sock)
#   --server URL       another control-plane URL (default the one that served this script)
#   --no-systemd       install, then run the agent in the foreground (no unit written or started)
# Environment:
#   GANTRY_CACERT=FILE        a CA certificate (PEM) the control plane's HTTPS certificate is checked
#                             against, by curl and then by the agent (copied to /etc/gantry/ca.pem)
#   GANTRY_INSTALL_MODE=foreground   as --no-systemd
#   GANTRY_INSTALL_ROOT=DIR   write every file under DIR (a test, an image being built)
#   GANTRY_AGENT_USER=NAME    the agent's user (default gantry-agent)
set -eu

SERVER=${quote(options.server)}
ROOT="\${GANTRY_INSTALL_ROOT:-}"
MODE="\${GANTRY_INSTALL_MODE:-systemd}"
AGENT_USER="\${GANTRY_AGENT_USER:-gantry-agent}"
BIN=/usr/local/bin/gantry-agent
DATA=/var/lib/gantry-agent
ENV_FILE=/etc/gantry/agent.env
UNIT=/etc/systemd/system/gantry-agent.service

say() { echo "gantry-agent install: $*" >&2; }
fail() { say "$*"; exit 1; }

# the settings of an earlier run (an upgrade keeps them)
GANTRY_AGENT_SERVER=""; GANTRY_AGENT_PUBLIC_IP="\${GANTRY_AGENT_PUBLIC_IP:-}"; GANTRY_AGENT_NAME="\${GANTRY_AGENT_NAME:-}"
DOCKER_HOST="\${DOCKER_HOST:-}"; NODE_EXTRA_CA_CERTS=""
if [ -f "$ROOT$ENV_FILE" ]; then . "$ROOT$ENV_FILE"; fi
[ -n "$GANTRY_AGENT_SERVER" ] && SERVER="$GANTRY_AGENT_SERVER"
TOKEN=""
while [ $# -gt 0 ]; do
  case "$1" in
    --token) [ $# -ge 2 ] || fail "--token needs a value"; TOKEN="$2"; shift 2 ;;
    --public-ip) [ $# -ge 2 ] || fail "--public-ip needs a value"; GANTRY_AGENT_PUBLIC_IP="$2"; shift 2 ;;
    --name) [ $# -ge 2 ] || fail "--name needs a value"; GANTRY_AGENT_NAME="$2"; shift 2 ;;
    --docker-host) [ $# -ge 2 ] || fail "--docker-host needs a value"; DOCKER_HOST="$2"; shift 2 ;;
    --server) [ $# -ge 2 ] || fail "--server needs a value"; SERVER="$2"; shift 2 ;;
    --no-systemd) MODE=foreground; shift ;;
    *) fail "unknown option $1 (options: --token, --public-ip, --name, --docker-host, --server, --no-systemd)" ;;
  esac
done
case "$MODE" in systemd|foreground) ;; *) fail "GANTRY_INSTALL_MODE must be systemd or foreground, not $MODE" ;; esac
case "$TOKEN" in ""|gjt_*) ;; *) fail "--token is not a join token (gjt_...): create one with gantry hosts token create" ;; esac
# what is written into the environment file must stay one word each
NL='
'
for value in "$TOKEN" "$SERVER" "$GANTRY_AGENT_PUBLIC_IP" "$GANTRY_AGENT_NAME" "$DOCKER_HOST"; do
  case "$value" in *"$NL"*) fail "a value has a line break" ;; esac
  if printf '%s' "$value" | LC_ALL=C grep -q '[^][A-Za-z0-9_.:/@%+,=-]'; then fail "not a valid value: $value"; fi
done
[ "$(id -u)" = 0 ] || fail "run me as root (curl ... | sudo sh -s -- ...)"
if [ -z "$TOKEN" ] && [ ! -f "$ROOT$DATA/credential.json" ]; then
  fail "this host has not joined yet: pass --token (gantry hosts token create on the control plane prints the command)"
fi

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64|Linux/amd64) ARCH=x64 ;;
  Linux/aarch64|Linux/arm64) ARCH=arm64 ;;
  *) fail "no agent for $(uname -s) $(uname -m): hosts run Linux on x86_64 or aarch64" ;;
esac
SUM=""
case "$ARCH" in
${sums}
    *) ;;
esac
[ -n "$SUM" ] || fail "the control plane serves no agent for linux-$ARCH: build it there (npm run build:agent on a linux-$ARCH machine, into dist/agent)"
for command in curl sha256sum useradd; do
  command -v "$command" >/dev/null 2>&1 || fail "$command is needed (apt-get install curl coreutils passwd)"
done
getent group docker >/dev/null 2>&1 || fail "there is no docker group: install Docker Engine first (apt-get install docker.io)"

CURL="curl -fsSL --retry 3"
if [ -n "\${GANTRY_CACERT:-}" ]; then
  [ -r "$GANTRY_CACERT" ] || fail "GANTRY_CACERT: cannot read $GANTRY_CACERT"
  mkdir -p "$ROOT/etc/gantry"
  cp "$GANTRY_CACERT" "$ROOT/etc/gantry/ca.pem.new" && chmod 0644 "$ROOT/etc/gantry/ca.pem.new"
  mv "$ROOT/etc/gantry/ca.pem.new" "$ROOT/etc/gantry/ca.pem"
  NODE_EXTRA_CA_CERTS=/etc/gantry/ca.pem
fi
[ -n "$NODE_EXTRA_CA_CERTS" ] && CURL="$CURL --cacert $ROOT$NODE_EXTRA_CA_CERTS"

# the executable: downloaded beside its place, checked, then moved over the old one at once
mkdir -p "$ROOT/usr/local/bin"
NEW="$ROOT$BIN.new.$$"
trap 'rm -f "$NEW"' EXIT
say "downloading the agent (linux-$ARCH) from $SERVER"
$CURL -o "$NEW" "$SERVER/agent/v1/download/gantry-agent-linux-$ARCH" || fail "the download from $SERVER failed"
GOT=$(sha256sum "$NEW" | cut -d' ' -f1)
[ "$GOT" = "$SUM" ] || fail "the download's SHA-256 is $GOT, not $SUM: nothing was installed"
chmod 0755 "$NEW"
VERSION=$("$NEW" --version) || fail "the downloaded agent does not run on this host"
mv -f "$NEW" "$ROOT$BIN"
trap - EXIT
say "installed $VERSION at $BIN"

# the user: a system user in the docker group (the engine's socket), nothing else
if ! id "$AGENT_USER" >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir "$DATA" --shell /usr/sbin/nologin --groups docker "$AGENT_USER"
  say "created the user $AGENT_USER (group docker)"
else
  id -nG "$AGENT_USER" | tr ' ' '\\n' | grep -qx docker || usermod -aG docker "$AGENT_USER"
fi

# the address pods are announced at: the one this host reaches the control plane from
if [ -z "$GANTRY_AGENT_PUBLIC_IP" ] && command -v ip >/dev/null 2>&1; then
  HOSTPART=$(echo "$SERVER" | sed -e 's|^[a-z]*://||' -e 's|/.*||' -e 's|:[0-9]*$||' -e 's|^\\[||' -e 's|\\]$||')
  TARGET=$(getent ahosts "$HOSTPART" 2>/dev/null | awk 'NR == 1 { print $1 }')
  [ -n "$TARGET" ] && GANTRY_AGENT_PUBLIC_IP=$(ip route get "$TARGET" 2>/dev/null | sed -n 's/.* src \\([^ ]*\\).*/\\1/p' | head -n 1)
fi

mkdir -p "$ROOT/etc/gantry" "$ROOT$DATA" "$ROOT/run/gantry-agent"
chown "$AGENT_USER:docker" "$ROOT$DATA" "$ROOT/run/gantry-agent"
chmod 0700 "$ROOT$DATA"
umask 077
{
  echo "GANTRY_AGENT_SERVER=$SERVER"
  [ -n "$GANTRY_AGENT_PUBLIC_IP" ] && echo "GANTRY_AGENT_PUBLIC_IP=$GANTRY_AGENT_PUBLIC_IP"
  [ -n "$GANTRY_AGENT_NAME" ] && echo "GANTRY_AGENT_NAME=$GANTRY_AGENT_NAME"
  [ -n "$DOCKER_HOST" ] && echo "DOCKER_HOST=$DOCKER_HOST"
  [ -n "$NODE_EXTRA_CA_CERTS" ] && echo "NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS"
  [ "$MODE" = systemd ] && [ -n "$TOKEN" ] && echo "GANTRY_AGENT_TOKEN=$TOKEN"
  true
} > "$ROOT$ENV_FILE.new"
chmod 0600 "$ROOT$ENV_FILE.new"
mv -f "$ROOT$ENV_FILE.new" "$ROOT$ENV_FILE"
umask 022

mkdir -p "$ROOT/etc/systemd/system"
cat > "$ROOT$UNIT" <<UNIT
[Unit]
Description=Gantry agent
Wants=network-online.target
After=network-online.target docker.service
Requires=docker.service

[Service]
User=$AGENT_USER
Group=docker
EnvironmentFile=$ENV_FILE
ExecStart=$BIN agent --data-dir $DATA
AmbientCapabilities=CAP_NET_ADMIN
CapabilityBoundingSet=CAP_NET_ADMIN
Environment=XTABLES_LOCKFILE=/run/gantry-agent/xtables.lock
RuntimeDirectory=gantry-agent
StateDirectory=gantry-agent
StateDirectoryMode=0700
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=2 3
KillSignal=SIGTERM
TimeoutStopSec=45

[Install]
WantedBy=multi-user.target
UNIT

if [ "$MODE" = foreground ]; then
  say "running the agent in the foreground as $AGENT_USER (no systemd)"
  set -a
  . "$ROOT$ENV_FILE"
  set +a
  [ -n "$TOKEN" ] && export GANTRY_AGENT_TOKEN="$TOKEN"
  export XTABLES_LOCKFILE="$ROOT/run/gantry-agent/xtables.lock"
  [ -n "$NODE_EXTRA_CA_CERTS" ] && export NODE_EXTRA_CA_CERTS="$ROOT$NODE_EXTRA_CA_CERTS"
  exec setpriv --reuid="$AGENT_USER" --regid=docker --init-groups --inh-caps=+net_admin --ambient-caps=+net_admin \\
    "$ROOT$BIN" agent --data-dir "$ROOT$DATA"
fi

[ -z "$ROOT" ] || { say "files written under $ROOT; systemd is not told (GANTRY_INSTALL_ROOT)"; exit 0; }
command -v systemctl >/dev/null 2>&1 || fail "systemctl not found: rerun with --no-systemd to run the agent without systemd"
systemctl daemon-reload
systemctl enable gantry-agent.service >/dev/null 2>&1
systemctl restart gantry-agent.service
say "started gantry-agent.service; journalctl -u gantry-agent -f follows it"
if [ -n "$TOKEN" ]; then
  # the token is spent at the join: once the credential is stored it leaves the environment file
  i=0
  while [ $i -lt 60 ] && [ ! -f "$DATA/credential.json" ]; do sleep 1; i=$((i + 1)); done
  if [ -f "$DATA/credential.json" ]; then
    sed -i '/^GANTRY_AGENT_TOKEN=/d' "$ENV_FILE"
    say "joined: $(cat /etc/hostname 2>/dev/null || hostname) is in gantry hosts list"
  else
    systemctl --no-pager status gantry-agent.service >&2 || true
    fail "the agent has not joined after 60 s: journalctl -u gantry-agent says why"
  fi
fi
`;
}
