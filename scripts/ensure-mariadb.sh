#!/usr/bin/env bash
# Makes sure a MariaDB server (the MySQL of tests) is installed, running and reachable, and that
# the test database and user exist. Idempotent; safe to run before every test run.
# Writes the connection URL to $ENGRAM_TEST_STATE_DIR/mysql-url (default ~/.engram-test, mode
# 0600): one file per machine, shared by every checkout, since they share the server.
# Fails loudly — never skips — when MariaDB cannot be installed or started.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[ensure-mariadb] %s\n' "$*" >&2; }
fail() { log "ERROR: $*"; exit 1; }

if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  command -v apt-get >/dev/null 2>&1 || fail "MariaDB is not installed and apt-get is unavailable; install mariadb-server (10.11+) yourself"
  [ "$(id -u)" = 0 ] || fail "MariaDB is not installed; run 'sudo apt-get install -y mariadb-server' or re-run as root"
  log "installing mariadb-server with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || fail "apt-get update failed"
  apt-get install -y -qq mariadb-server >/dev/null || fail "apt-get install mariadb-server failed"
fi

if ! mariadb-admin --protocol=socket ping >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail "MariaDB is not running and this user cannot start it; start it (e.g. 'sudo service mariadb start')"
  log "starting mariadbd"
  install -d -o mysql -g mysql /run/mysqld
  start-stop-daemon --start --oknodo --background --pidfile /run/mysqld/mysqld.pid \
    --exec /usr/sbin/mariadbd -- --user=mysql --pid-file=/run/mysqld/mysqld.pid \
    || fail "start-stop-daemon could not start /usr/sbin/mariadbd"
  for _ in $(seq 1 100); do
    mariadb-admin --protocol=socket ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb-admin --protocol=socket ping >/dev/null 2>&1 || fail "mariadbd did not become ready within 10 s (see /var/log/mysql or 'journalctl')"
fi

state_dir=${ENGRAM_TEST_STATE_DIR:-$HOME/.engram-test}
mkdir -p "$state_dir"
chmod 700 "$state_dir"
url_file=$state_dir/mysql-url
if [ ! -s "$url_file" ]; then
  # A throwaway password for a loopback-only test user, generated per machine, never committed.
  password=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  (umask 077; printf 'mysql://engram_test:%s@127.0.0.1:3306/engram_test\n' "$password" > "$url_file")
fi
password=$(sed -E 's#^mysql://engram_test:([^@]*)@.*#\1#' "$url_file")

mariadb --protocol=socket <<SQL || fail "could not create the test database and user (run as root or set up engram_test yourself)"
CREATE DATABASE IF NOT EXISTS engram_test CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS 'engram_test'@'127.0.0.1' IDENTIFIED BY '${password}';
CREATE USER IF NOT EXISTS 'engram_test'@'localhost' IDENTIFIED BY '${password}';
ALTER USER 'engram_test'@'127.0.0.1' IDENTIFIED BY '${password}';
ALTER USER 'engram_test'@'localhost' IDENTIFIED BY '${password}';
GRANT ALL PRIVILEGES ON \`engram\\_test%\`.* TO 'engram_test'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`engram\\_test%\`.* TO 'engram_test'@'localhost';
FLUSH PRIVILEGES;
SQL
log "MariaDB $(mariadb-admin --protocol=socket version 2>/dev/null | sed -n 's/^Server version[[:space:]]*//p') ready; URL in $url_file"
