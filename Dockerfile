# syntax=docker/dockerfile:1
#
# Conclave: one Dockerfile for every app. Build one image per app with the APP build argument:
#
#   docker build --build-arg APP=intake -t conclave/intake:dev .
#   (APP = intake | resolver | sweeper | escalation | council | audit | cli)
#
# The build stage compiles all seven apps once (BuildKit caches it, so the per-app images share
# it); the runtime stage takes dist/apps/$APP (webpack bundle main.js plus the package.json and
# package-lock.json that Nx generates with only that app's runtime dependencies) and installs
# those dependencies without devDependencies.
#
# Built for real with podman 4.3 by deploy/images/build.sh, which also makes the base image locally
# where no registry answers (docs/operations.md, "Images and the compose stack").
#
# Behind a TLS-intercepting proxy, give npm the proxy's CA as a build secret (nothing is kept in a
# layer): `--secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt`. Without it npm uses Node's
# own CA list.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---- build ------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /workspace
ENV CI=true \
    NX_DAEMON=false \
    NX_NO_CLOUD=true \
    NX_TUI=false \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

# Dependencies first, so source edits do not invalidate the npm layer.
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci \
 && test -x node_modules/.bin/nx

COPY . .
RUN npx nx run-many -t build \
      --projects=intake,resolver,sweeper,escalation,council,audit,cli

# ---- runtime ----------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ARG APP
RUN test -n "${APP}" || { echo "build with --build-arg APP=<intake|resolver|sweeper|escalation|council|audit|cli>" >&2; exit 1; }
# Services listen on loopback by default; in a container that would hide them from the probes
# and the port mapping, so the image opens them (keep the ports on an internal network).
ENV NODE_ENV=production \
    HTTP_HOST=0.0.0.0 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app

# Owned by root and not writable by the runtime user: the app cannot modify its own code.
COPY --from=build /workspace/dist/apps/${APP}/ ./
RUN --mount=type=cache,target=/root/.npm --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && if [ -f package-lock.json ]; then npm ci --omit=dev; else npm install --omit=dev; fi \
 && rm -rf /root/.npm/_logs

LABEL org.opencontainers.image.title="conclave-${APP}" \
      org.opencontainers.image.licenses="MIT"

# uid/gid 1000 is the `node` user of the official image; numeric so that Kubernetes
# runAsNonRoot can verify it.
USER 1000:1000

# Services drain on SIGTERM (NestJS shutdown hooks). No HEALTHCHECK here: the HTTP port differs
# per service and the cli image serves none; docker-compose.yml and the Kubernetes manifests
# probe /healthz and /readyz themselves.
STOPSIGNAL SIGTERM
CMD ["node", "main.js"]
