# Sourced by scripts/test: a throwaway PostgreSQL server for the PostgresStore tests.
# It runs as a non-root user (the package's "postgres" user when we are root), keeps its data and its
# unix socket in a temporary directory (no TCP port), and is stopped and removed when the script exits.
# Exports LEARNLOOP_TEST_POSTGRES. A LEARNLOOP_TEST_POSTGRES already set is used as it is (no server started).
if [ -z "${LEARNLOOP_TEST_POSTGRES:-}" ]; then
    PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/initdb" ]; then
        echo "PostgreSQL server binaries not found under /usr/lib/postgresql (run scripts/system-deps)" >&2
        exit 1
    fi
    PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/learnloop-pg.XXXXXX")"
    if [ "$(id -u)" -eq 0 ]; then
        PG_USER=postgres
        id -u "$PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$PG_USER"
        chown "$PG_USER" "$PG_DIR"
        pg_as() { runuser -u "$PG_USER" -- "$@"; }
    else
        PG_USER="$(id -un)"
        pg_as() { "$@"; }
    fi
    _learnloop_pg_stop() {
        pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
        rm -rf "$PG_DIR"
    }
    trap _learnloop_pg_stop EXIT
    pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U "$PG_USER" -A trust -E UTF8 --locale=C --no-sync >"$PG_DIR/initdb.log"
    # a test server: no TCP, no fsync (the tests kill clients, never the server); with
    # LEARNLOOP_POSTGRES_DURABLE=1 (benchmarks) PostgreSQL's own durable defaults: fsync, synchronous commits
    PG_SYNC="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ "${LEARNLOOP_POSTGRES_DURABLE:-0}" = 1 ] && PG_SYNC=""
    pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start \
        -o "-k $PG_DIR -c listen_addresses= -c max_connections=200 $PG_SYNC" \
        >/dev/null
    export LEARNLOOP_TEST_POSTGRES="postgresql://$PG_USER@/postgres?host=$PG_DIR"
    echo "== PostgreSQL $("$PG_BIN/postgres" --version | grep -o "[0-9][0-9.]*" | head -n 1) on $PG_DIR"
fi
