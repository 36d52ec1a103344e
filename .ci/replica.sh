#!/usr/bin/env bash
# A streaming replica of a local PostgreSQL primary, from Debian's tools: by default of cluster
# `<version> main` (127.0.0.1:5432) as cluster `<version> replica` on port 5433
# (`replica.sh <primary cluster> <primary port> <replica cluster> <replica port>` for another pair),
# made with pg_basebackup and kept in step by streaming replication. Idempotent: a replica already
# streaming is left alone, a broken one is made again.
# Prints the replica's URL (for DATABASE_READ_URL) on its last line; anything else goes to stderr.
set -euo pipefail

version="$(ls /etc/postgresql | sort -n | tail -1)"
primary_name="${1:-main}"
primary_port="${2:-5432}"
name="${3:-replica}"
port="${4:-5433}"
primary=(-h 127.0.0.1 -p "$primary_port" -U postgres)
url="postgres://postgres@127.0.0.1:${port}/test"
say () { echo "replica.sh: $*" >&2; }

pg_isready -q "${primary[@]}" || { say "the primary on 127.0.0.1:${primary_port} is not up"; exit 1; }

# The primary must accept replication connections from loopback (a plain `host all` line does not cover them).
hba="/etc/postgresql/${version}/${primary_name}/pg_hba.conf"
if ! grep -Eq '^host[[:space:]]+replication[[:space:]]+all[[:space:]]+127\.0\.0\.1/32[[:space:]]+trust' "$hba"; then
  echo 'host replication all 127.0.0.1/32 trust' >> "$hba"
  psql -q "${primary[@]}" -d postgres -c 'SELECT pg_reload_conf()' >/dev/null
  say "added a replication line to $hba"
fi
# The tests' database, made on the primary so that the replica has it too.
psql -qAt "${primary[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || psql -q "${primary[@]}" -d postgres -c 'CREATE DATABASE test' >/dev/null

# In recovery is not enough: a replica whose primary recycled the WAL it still needed (it was
# stopped a while) stays in recovery, waiting for that WAL forever. Its WAL receiver must stream.
streaming () {
  for _ in $(seq 15); do
    [ "$(psql -qAt -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "SELECT pg_is_in_recovery() AND EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming')" 2>/dev/null)" = t ] && return 0
    sleep 1
  done
  return 1
}
wait_ready () {
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p "$port" && return 0; sleep 1; done
  return 1
}

if pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$version $name"; then
  pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >/dev/null 2>&1 || true
  if wait_ready && streaming; then echo "$url"; exit 0; fi
  say "the existing replica cluster does not stream; making it again"
  pg_dropcluster --stop "$version" "$name"
fi

pg_createcluster "$version" "$name" --port "$port" >/dev/null
data="/var/lib/postgresql/${version}/${name}"
# Loopback connections to the replica need no password either, as on the primary.
printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' > "/etc/postgresql/${version}/${name}/pg_hba.conf"
# pg_basebackup fills an empty directory; the cluster's own (owned by postgres) is emptied rather than removed.
find "$data" -mindepth 1 -delete
# -R writes standby.signal and primary_conninfo; -X stream copies the WAL written meanwhile.
su postgres -c "pg_basebackup -h 127.0.0.1 -p $primary_port -U postgres -D '$data' -R -X stream -c fast"
pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >&2
wait_ready || { say "the replica did not start (see /var/log/postgresql/postgresql-${version}-${name}.log)"; exit 1; }
streaming || { say "the replica started but is not in recovery"; exit 1; }
echo "$url"
