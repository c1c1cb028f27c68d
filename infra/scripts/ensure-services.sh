#!/usr/bin/env bash
# Makes local PostgreSQL and Redis answer on 127.0.0.1, for the quick start and CI on a bare
# Debian machine. Does nothing when they already answer; installs them from Debian's packages
# only when they are missing. Never touches data it did not create.
set -euo pipefail

PG_PORT="${PG_PORT:-5432}"
REDIS_PORT="${REDIS_PORT:-6379}"

log() { printf '[ensure-services] %s\n' "$*" >&2; }
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else log "need root for: $*"; return 1; fi; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

wait_for() { # port name
  for _ in $(seq 1 60); do answers "$1" && return 0; sleep 0.5; done
  log "$2 did not start on 127.0.0.1:$1"; return 1
}

if answers "$PG_PORT"; then
  log "PostgreSQL answers on 127.0.0.1:$PG_PORT"
else
  if ! command -v pg_ctlcluster >/dev/null; then
    log "installing PostgreSQL"
    apt_install postgresql
  fi
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  log "starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  wait_for "$PG_PORT" PostgreSQL
  # Debian's default pg_hba asks for a password on 127.0.0.1: give the superuser the one the
  # default DATABASE_URL uses. Only on a server this script started, and only a local dev one.
  as_root su postgres -c "psql -q -c \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null || true
fi

if answers "$REDIS_PORT"; then
  log "Redis answers on 127.0.0.1:$REDIS_PORT"
else
  if ! command -v redis-server >/dev/null; then
    log "installing Redis"
    apt_install redis-server
  fi
  log "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --maxmemory-policy noeviction --logfile /tmp/slipway-redis.log
  wait_for "$REDIS_PORT" Redis
fi
