#!/bin/sh
# The recorder's database beside Temporal's, owned by its own role (password from the
# environment: never written in a file).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --set=password="$MEMLIFE_DB_PASSWORD" <<'SQL'
CREATE ROLE memlife LOGIN PASSWORD :'password';
CREATE DATABASE memlife OWNER memlife;
SQL
