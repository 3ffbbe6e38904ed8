# Gantry's container image: one image for `gantry serve` (the default) and `gantry agent`.
#
#   docker build -t gantry .
#   docker run -d -p 8080:8080 -p 8081:8081 -p 2222:2222 -v gantry-data:/var/lib/gantry gantry
#
# NODE_IMAGE is the final stage's base and BUILD_IMAGE the build stage's (default: the same official
# `node` image). The build stage needs npm and, when the image has none, installs python3, make and
# g++ for the native addons (better-sqlite3, node-pty); none of it reaches the final stage.
# docs/deploy.md "Container image" says what each stage holds and what runs with which privileges.
ARG NODE_IMAGE=node:22-bookworm-slim
ARG BUILD_IMAGE=${NODE_IMAGE}

FROM ${BUILD_IMAGE} AS build
RUN if ! command -v g++ >/dev/null || ! command -v make >/dev/null || ! command -v python3 >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
COPY package.json package-lock.json ./
# Dependencies first (a layer reused while only sources change); their install scripts build the
# native addons; `prepare` (the project's own build) runs below, once the sources are in.
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && npm rebuild better-sqlite3 node-pty esbuild \
 && rm -rf node_modules/node-pty/prebuilds
COPY . .
# the commit `gantry --version` names (no .git reaches the build)
ARG GANTRY_BUILD_COMMIT=
RUN GANTRY_BUILD_COMMIT=${GANTRY_BUILD_COMMIT} npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-pty/build/Release/obj.target node_modules/node-pty/build/Release/.deps \
           node_modules/node-pty/deps node_modules/node-pty/third_party node_modules/better-sqlite3/deps \
           node_modules/better-sqlite3/src node_modules/better-sqlite3/build/Release/obj.target \
           node_modules/better-sqlite3/build/Release/.deps node_modules/better-sqlite3/build/deps \
 && find dist -name '*.map' -delete \
 && mkdir -p /app \
 && cp -a package.json LICENSE bin dist node_modules /app/

FROM ${NODE_IMAGE}
# iptables: the container firewall `serve` and `agent` install for the Docker runtime (it needs
# CAP_NET_ADMIN in the host's network namespace: docs/deploy.md); tini: PID 1, reaping what the
# process runtime's instances leave.
RUN if ! command -v iptables-restore >/dev/null || ! command -v tini >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends iptables tini && rm -rf /var/lib/apt/lists/*; \
    fi \
 && groupadd --system --gid 10001 gantry \
 && useradd --system --uid 10001 --gid gantry --home-dir /var/lib/gantry --shell /usr/sbin/nologin gantry \
 && mkdir -p /var/lib/gantry && chown gantry:gantry /var/lib/gantry
COPY --from=build /app /app
ENV NODE_ENV=production \
    GANTRY_HOST=0.0.0.0 \
    GANTRY_DATA_DIR=/var/lib/gantry
VOLUME /var/lib/gantry
WORKDIR /var/lib/gantry
USER gantry
# the API and console, the pod HTTP proxy, the SSH proxy
EXPOSE 8080 8081 2222
# /healthz over bash's /dev/tcp (no Node process per probe), every second: healthy within a second of the server's start
HEALTHCHECK --interval=1s --timeout=2s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-8080} && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["tini", "--", "node", "/app/bin/gantry.js"]
CMD ["serve"]
