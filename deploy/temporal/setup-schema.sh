#!/bin/sh
# Creates the Temporal and visibility databases and brings both schemas to the newest version of the
# server's release, with the server's own SQL tool (Temporal's production path: no auto-setup).
# Idempotent: safe on every deploy, and the way to upgrade schemas before upgrading the server.
# Run by `npm run cluster` (the tool and schemas built from the Go module) and by the
# `temporal-schema` service of docker-compose.yml (temporalio/admin-tools, same version).
#   SQL_HOST SQL_PORT SQL_USER SQL_PASSWORD   where and as whom (read by the SQL tool itself)
#   TEMPORAL_SQL_TOOL     the tool (default: temporal-sql-tool on PATH)
#   TEMPORAL_SCHEMA_DIR   the release's schema/ directory (default: /etc/temporal/schema)
set -eu
tool="${TEMPORAL_SQL_TOOL:-temporal-sql-tool}"
schemas="${TEMPORAL_SCHEMA_DIR:-/etc/temporal/schema}/postgresql/v12"
for pair in "${TEMPORAL_DB_NAME:-temporal}:temporal" "${TEMPORAL_VISIBILITY_DB_NAME:-temporal_visibility}:visibility"; do
  db="${pair%%:*}"
  kind="${pair##*:}"
  "$tool" --plugin postgres12 --db "$db" create-database
  "$tool" --plugin postgres12 --db "$db" setup-schema -v 0.0
  "$tool" --plugin postgres12 --db "$db" update-schema -d "$schemas/$kind/versioned"
done
