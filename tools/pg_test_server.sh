#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suite: every store test runs on SQLite and again on
# the server named by RAGMETER_TEST_DATABASE_URL (.ci/run starts one with this script).
#
#   url=$(tools/pg_test_server.sh start DIR)   # prints postgresql+psycopg://postgres@127.0.0.1:PORT/ragmeter_test
#   tools/pg_test_server.sh stop DIR           # stops the server and removes DIR
#
# start: installs Debian's `postgresql` package when initdb is missing (root only), creates a
# fresh cluster in DIR/data owned by the `postgres` user (initdb refuses root, so it runs through
# `runuser -u postgres` when we are root), trust authentication for the local socket and
# 127.0.0.1 only, listening on 127.0.0.1 at a free port and on a unix socket in DIR, fsync off
# (a throwaway cluster needs no crash safety), then creates the database ragmeter_test. DIR must
# be empty, absent, or a folder this script made before (a stale one is cleared). Only the URL
# goes to stdout; progress and errors go to stderr, and any failure exits non-zero.
# stop: stops the server (fast shutdown) and removes DIR; only a folder this script made.
set -euo pipefail

MARKER=".ragmeter-pg-test"
DB="ragmeter_test"

die() {
    echo "pg_test_server: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
}

# The folder holding initdb/pg_ctl: the newest /usr/lib/postgresql/N/bin, else pg_config's.
bindir() {
    local d best=""
    for d in /usr/lib/postgresql/*/bin; do
        [[ -x "$d/initdb" ]] && best="$d"
    done
    if [[ -z "$best" ]] && command -v pg_config >/dev/null 2>&1; then
        d="$(pg_config --bindir)"
        [[ -x "$d/initdb" ]] && best="$d"
    fi
    if [[ -z "$best" ]] && command -v initdb >/dev/null 2>&1; then
        best="$(dirname "$(command -v initdb)")"
    fi
    echo "$best"
}

# Run a PostgreSQL program as the postgres user when we are root (initdb and the server refuse
# to run as root); as ourselves otherwise.
as_pg() {
    if [[ $EUID -eq 0 ]]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

ensure_installed() {
    local bin
    bin="$(bindir)"
    if [[ -z "$bin" ]]; then
        [[ $EUID -eq 0 ]] || die "PostgreSQL is not installed (no initdb); install Debian's postgresql package"
        echo "pg_test_server: initdb not found; installing Debian's postgresql package" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2 || die "apt-get update failed"
        apt-get install -y -qq postgresql >&2 || die "apt-get install postgresql failed"
        bin="$(bindir)"
        [[ -n "$bin" ]] || die "postgresql installed but no initdb found"
    fi
    echo "$bin"
}

# True while process $1 runs (a killed server's postmaster may linger as a zombie: not running).
alive() {
    local state
    [[ -n "$1" ]] || return 1
    state="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z* ]]
}

# Stop whatever server still runs on DIR/data (a stale folder from a killed run).
stop_server() {
    local dir="$1" bin="$2" pid
    [[ -f "$dir/data/postmaster.pid" ]] || return 0
    pid="$(head -n 1 "$dir/data/postmaster.pid")"
    alive "$pid" || return 0
    as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 \
        || as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >&2 \
        || true
    ! alive "$pid" || die "could not stop the server in $dir/data (pid $pid)"
}

ours_or_empty() {
    local dir="$1"
    [[ ! -e "$dir" ]] && return 0
    [[ -d "$dir" ]] || return 1
    [[ -e "$dir/$MARKER" ]] && return 0
    [[ -z "$(ls -A "$dir")" ]]
}

start() {
    local dir="$1" bin port attempt
    ours_or_empty "$dir" || die "$dir is not empty and was not made by this script; give an empty folder"
    bin="$(ensure_installed)"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    stop_server "$dir" "$bin"
    rm -rf "${dir:?}/data" "$dir/server.log" "$dir"/.s.PGSQL.*
    touch "$dir/$MARKER"
    if [[ $EUID -eq 0 ]]; then
        id postgres >/dev/null 2>&1 || die "there is no postgres user (install Debian's postgresql package)"
        chown postgres: "$dir" "$dir/$MARKER"
        as_pg test -w "$dir" || die "the postgres user cannot write to $dir (is a parent folder closed to it?)"
    fi
    as_pg "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --no-locale --no-sync \
        --auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1 \
        || { cat "$dir/initdb.log" >&2; die "initdb failed in $dir/data"; }
    # trust for the local socket and 127.0.0.1 only (initdb's file also trusts ::1 and replication)
    printf '%s\n' "local all all trust" "host all all 127.0.0.1/32 trust" >"$dir/data/pg_hba.conf"
    for attempt in 1 2 3 4 5; do
        port="$(free_port)"
        cat >>"$dir/data/postgresql.conf" <<EOF
# pg_test_server.sh (attempt $attempt)
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
        if as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
            break
        fi
        # another process may have taken the port between choosing and binding it: try another
        port=""
    done
    if [[ -z "$port" ]]; then
        tail -n 30 "$dir/server.log" >&2 2>/dev/null || true
        die "the PostgreSQL server in $dir/data did not start (log above: $dir/server.log)"
    fi
    as_pg "$bin/createdb" -h "$dir" -p "$port" -U postgres "$DB" \
        || die "createdb $DB failed (server log: $dir/server.log)"
    echo "$port" >"$dir/port"
    echo "pg_test_server: PostgreSQL $(cat "$dir/data/PG_VERSION") on 127.0.0.1:$port, data in $dir" >&2
    echo "postgresql+psycopg://postgres@127.0.0.1:$port/$DB"
}

stop() {
    local dir="$1" bin
    [[ -e "$dir" ]] || return 0
    [[ -e "$dir/$MARKER" ]] || ours_or_empty "$dir" || die "$dir was not made by this script; not removing it"
    bin="$(bindir)"
    if [[ -n "$bin" ]]; then
        stop_server "$dir" "$bin"
    fi
    rm -rf "${dir:?}"
}

[[ $# -eq 2 ]] || usage
case "$1" in
    start) start "$2" ;;
    stop) stop "$2" ;;
    *) usage ;;
esac
