# syntax=docker/dockerfile:1
# The nodewarden operator image: `docker build -t nodewarden:latest .`

# --- build: compile TypeScript, then drop dev dependencies ---
FROM node:24-slim AS build
WORKDIR /src
# Dependencies first, so source edits reuse this layer.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && npm prune --omit=dev --no-audit --no-fund

# --- runtime: only what `node dist/cmd/main.js` needs ---
FROM node:24-slim
# The operator runs as bin/nodewarden runs it: 1 MiB young-generation semi-spaces
# (a controller's short-lived garbage does not need the default 16 MiB x3 of peak RSS),
# two malloc arenas, and no optimizing compilers (about 15 MiB less at a drain's peak,
# the same drain time). --no-opt is refused in NODE_OPTIONS, hence the entrypoint.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    NODE_OPTIONS="--enable-source-maps --max-semi-space-size=1"
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY bin ./bin
# `nodewarden version` reports the pinned Kubernetes versions from here.
COPY hack/versions.env ./hack/versions.env
# A numeric non-root user: matches runAsUser in the manifests, needs no passwd entry.
USER 65532:65532
ENTRYPOINT ["node", "--no-opt", "--no-maglev", "/app/dist/cmd/main.js"]
CMD ["operator"]
