#!/usr/bin/env bash
# The cluster the many-instances test drives (test/cluster.test.ts, issue "Past one machine"), from
# Debian's packages: a PostgreSQL primary of its own (cluster `<version> cluster`, 127.0.0.1:5434,
# so that stopping it does not disturb the other tests' primary), its streaming replica
# (`<version> clusterreplica`, 5435, made by replica.sh) and PgBouncer in transaction mode in front
# of the primary (127.0.0.1:6434; any database name: a test makes a database of its own).
# Idempotent: what already runs is left alone.
# Prints `export NAME=value` lines for the test on stdout; anything else goes to stderr.
set -euo pipefail
cd "$(dirname "$0")"

version="$(ls /etc/postgresql | sort -n | tail -1)"
name=cluster
port=5434
replica_port=5435
bouncer_port=6434
say () { echo "cluster.sh: $*" >&2; }

if ! pg_lsclusters -h | awk '{print $1, $2}' | grep -qx "$version $name"; then
  pg_createcluster "$version" "$name" --port "$port" >/dev/null
  # Loopback connections need no password, as on the machine's own cluster; replication too.
  printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nhost replication all 127.0.0.1/32 trust\n' \
    > "/etc/postgresql/${version}/${name}/pg_hba.conf"
fi
pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start >/dev/null 2>&1 || true
for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p "$port" && break; sleep 1; done
pg_isready -q -h 127.0.0.1 -p "$port" || { say "the primary did not start (see /var/log/postgresql/postgresql-${version}-${name}.log)"; exit 1; }

replica_url="$(./replica.sh "$name" "$port" clusterreplica "$replica_port" | tail -1)"

command -v pgbouncer >/dev/null 2>&1 || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer >&2; }
# PgBouncer refuses to run as root: its files belong to postgres.
dir=/var/lib/postgresql/ci-pgbouncer
if ! pg_isready -q -h 127.0.0.1 -p "$bouncer_port"; then
  install -d -o postgres -g postgres "$dir"
  # trust still needs the user listed; the pool is small on purpose, so that consecutive
  # transactions of one client meet different server connections and the reverse.
  echo '"postgres" ""' > "$dir/users.txt"
  cat > "$dir/pgbouncer.ini" <<EOF
[databases]
* = host=127.0.0.1 port=$port

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = 8
max_client_conn = 400
server_login_retry = 1
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  chown postgres:postgres "$dir"/*
  su postgres -c "pgbouncer -d '$dir/pgbouncer.ini'" >&2
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p "$bouncer_port" && break; sleep 1; done
  pg_isready -q -h 127.0.0.1 -p "$bouncer_port" || { say "PgBouncer did not start (see $dir/pgbouncer.log)"; exit 1; }
fi

echo "export CLUSTER_DATABASE_URL=postgres://postgres@127.0.0.1:${bouncer_port}/test"
echo "export CLUSTER_PRIMARY_URL=postgres://postgres@127.0.0.1:${port}/test"
echo "export CLUSTER_READ_URL=${replica_url}"
echo "export CLUSTER_PRIMARY='${version} ${name}'"
