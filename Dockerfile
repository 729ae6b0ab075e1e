# Weir in a container: the same install and start commands CI runs outside
# Docker (npm ci, then npm start; test/deploy/docker-files.test.ts keeps
# them equal to .ci/run and package.json). TypeScript runs directly through
# tsx, so there is no build step.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --omit=dev
COPY bin ./bin
COPY src ./src
# Listen on every interface of the container; WEIR_PUBLIC_URL and
# WEIR_INGEST_URL say where the outside world reaches it.
ENV WEIR_HOST=0.0.0.0 WEIR_DATA_DIR=/data
RUN mkdir /data && chown node:node /data
VOLUME /data
EXPOSE 8080 8081
USER node
CMD ["npm", "start"]
