# The worker and gateway image. The Temporal server is NOT built here: in a deployment it is a real cluster
# (docker-compose.yml uses the official images) or Temporal Cloud.
#
# Two stages: the first compiles dist/ and the workflow bundle (`npm run build`, with the dev dependencies); the
# second holds the production dependencies, the sources and that dist/. bin/tenantctl.js runs dist/ (with
# TENANTCTL_FROM_DIST=1 it does not compare file times, which layers may change): operator commands from the CLI
# bundle dist/cli/, the worker and gateway from the compiled dist/src/; the worker loads
# dist/workflow-bundle.js instead of running webpack at start. Measured (issue 20): through tsx the worker spent
# 54 ms of CPU per onboarding instead of 41, and bundling in its own process cost about 110 MB of RSS.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The prepare script (scripts/build-dist.js) runs here and skips: no sources yet.
COPY scripts/build-dist.js ./scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
RUN npm run build && test -f dist/.built && test -f dist/workflow-bundle.js && test -f dist/cli/main.js

FROM node:20-bookworm-slim
WORKDIR /app
# dist/ below was compiled from exactly these sources: run it without comparing file times (bin/dist-fresh.js).
ENV NODE_ENV=production TENANTCTL_FROM_DIST=1
# The worker's Node flags (src/infra/worker-node-flags.ts): they size the heap V8 makes as a process starts,
# which the worker cannot change once it runs (a 4 MB young generation: about 40 MB less RSS at 500 in flight).
# The gateway and operator commands get them too, at no measurable cost. NODE_OPTIONS set in the deployment
# replaces this line's: keep the flag in it.
ENV NODE_OPTIONS=--max-semi-space-size=4
COPY package.json package-lock.json ./
COPY scripts/build-dist.js ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations
COPY --from=build /app/dist ./dist
USER node
ENTRYPOINT ["node", "bin/tenantctl.js"]
CMD ["worker"]
