#!/bin/sh
# Runs once, as the postgres superuser, when docker-compose's Postgres volume is first
# initialised (the postgres image's /docker-entrypoint-initdb.d). It makes:
#   - the control plane's role `slipway`: not a superuser, only CREATEDB and CREATEROLE (each
#     cloud-hosted deployment gets a database and a role of its own), and its database;
#   - `slipway_deployment_template`, the template deployment databases are cloned from, with
#     the catalog hardening applied (docs/operations.md, Deployment databases): inside a
#     deployment's database, its role cannot list the server's other databases and roles.
#     Only a superuser can apply it, so it is done here, once.
# Keep the REVOKE statements in step with CATALOG_HARDENING (libs/db/src/deployment-database.ts);
# test/infra/docker-compose.test.ts checks they match.
set -eu
: "${SLIPWAY_DB_PASSWORD:?SLIPWAY_DB_PASSWORD must be set}"

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -v pw="$SLIPWAY_DB_PASSWORD" <<'SQL'
CREATE ROLE slipway LOGIN NOSUPERUSER CREATEDB CREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD :'pw';
CREATE DATABASE slipway OWNER slipway;
CREATE DATABASE slipway_deployment_template;
SQL

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname slipway_deployment_template <<'SQL'
REVOKE SELECT ON pg_catalog.pg_database, pg_catalog.pg_roles, pg_catalog.pg_user, pg_catalog.pg_group, pg_catalog.pg_auth_members,
     pg_catalog.pg_db_role_setting, pg_catalog.pg_shdescription, pg_catalog.pg_stat_activity, pg_catalog.pg_stat_database,
     pg_catalog.pg_stat_database_conflicts FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION pg_catalog.pg_get_userbyid(oid), pg_catalog.pg_stat_get_activity(integer),
     pg_catalog.pg_describe_object(oid, oid, integer), pg_catalog.pg_identify_object(oid, oid, integer),
     pg_catalog.pg_identify_object_as_address(oid, oid, integer) FROM PUBLIC;
SQL

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -c 'ALTER DATABASE slipway_deployment_template WITH IS_TEMPLATE true ALLOW_CONNECTIONS false'
