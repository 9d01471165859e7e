# The worker (and later the gateway) image. The Temporal server is NOT built here: in a deployment
# it is a real cluster (docker-compose.yml uses the official images) or Temporal Cloud.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# The prepare script (scripts/build-dist.js) runs here and skips: no sources yet, no TypeScript.
# bin/tenantctl.js then runs the sources through tsx; start-up time does not matter to a worker.
COPY scripts/build-dist.js ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY bin ./bin
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations
USER node
ENTRYPOINT ["node", "bin/tenantctl.js"]
CMD ["worker"]
