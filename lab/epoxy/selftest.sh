#!/bin/bash
# selftest.sh: prove that OpenStack Epoxy's services start from the Debian 13 root filesystem
# ($LAB_ROOTFS, lab/epoxy/build-rootfs.sh) by chroot (lab/epoxy/rootfs-exec) inside a network
# namespace, WITHOUT touching a running asap2lab: its own namespace, addresses, state directory
# and ports; nothing named asap2lab* is created, read or stopped.
#   ES_NS=epoxy-selftest ES_IP=198.19.251.1 LAB_STATE=/var/tmp/epoxy-selftest bash lab/epoxy/selftest.sh
# Starts MariaDB, RabbitMQ, Keystone (uwsgi), gets a token with the root's `openstack` CLI, then
# Placement (uwsgi), Glance, Nova API/conductor/scheduler and neutron-server, each checked through
# its API with the CLI; prints each one's start time and the versions of the root's tools. Every
# process it started is ended by its process group, the namespace deleted, on any exit.
set -euo pipefail
ES_NS=${ES_NS:-epoxy-selftest}
ES_IP=${ES_IP:-198.19.251.1}
export LAB_STATE=${LAB_STATE:-/var/tmp/epoxy-selftest}
case "$ES_NS$LAB_STATE" in *asap2lab*) echo "selftest.sh: refusing names of the asap2lab ($ES_NS, $LAB_STATE)" >&2; exit 2 ;; esac
EPOXY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$EPOXY_DIR/../lib/common.sh"
source "$LAB_DIR/releases/epoxy.sh"
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
say() { echo "[epoxy-selftest +$(since "$T0")s] $*"; }
[ "$(id -u)" = 0 ] || { echo "selftest.sh: must run as root" >&2; exit 1; }
ip netns list | grep -qw "$ES_NS" && { echo "selftest.sh: netns $ES_NS exists (another selftest?)" >&2; exit 1; }

IN=(ip netns exec "$ES_NS" "$EPOXY_DIR/rootfs-exec")   # a command from the root, in the namespace
started=()
cleanup() {
  local p
  for p in "${started[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do
    for _ in $(seq 40); do kill -0 -- "-$p" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$p" 2>/dev/null || true
  done
  ip netns del "$ES_NS" 2>/dev/null || true
  rm -rf "$LAB_STATE/data" "$RUN"
  say "stopped ${#started[@]} process groups, deleted netns $ES_NS (logs kept in $LOGS)"
}
trap cleanup EXIT
start() { # NAME CMD...: own session/process group, output to $LOGS/NAME.out
  local name=$1; shift
  setsid "${IN[@]}" "$@" >>"$LOGS/$name.out" 2>&1 </dev/null &
  started+=($!)
}
wait_for() { # WHAT TIMEOUT CMD...
  local what=$1 timeout=$2 t=$(date +%s.%N); shift 2
  local deadline=$(( $(date +%s) + timeout ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "selftest.sh: timed out after ${timeout}s waiting for $what" >&2; return 1; }
    sleep 0.5
  done
  say "$what ready ($(since "$t")s)"
}
port_open() { ip netns exec "$ES_NS" bash -c "echo >/dev/tcp/$ES_IP/$1" 2>/dev/null; }
rand() { head -c 30 /dev/urandom | base64 -w0 | tr -dc 'A-Za-z0-9' | cut -c1-20; }

rm -rf "$LAB_STATE/data" "$RUN"
mkdir -p "$PIDS" "$ETC"/{keystone,placement,glance,nova,neutron} "$LOGS/rabbit" \
  "$DATA"/{mysql,rabbit,rabbit-home,keystone,glance/images,nova,neutron,locks}
ip netns add "$ES_NS"
ip -n "$ES_NS" link set lo up
ip -n "$ES_NS" addr add "$ES_IP/32" dev lo   # the control address (no dummy module in containers)
say "netns $ES_NS with $ES_IP; root $LAB_ROOTFS; state $LAB_STATE"

DB_PW=$(rand) SVC_PW=$(rand) ADMIN_PW=$(rand)
DB="mysql+pymysql://os:$DB_PW@$ES_IP:$DB_PORT"
KS=http://$ES_IP:5000
mysql_es() { "${IN[@]}" mariadb --no-defaults -S "$RUN/mysqld.sock" -u root "$@"; }

# ------------------------------------------------------------- MariaDB, RabbitMQ (as lab/up.sh)
"${IN[@]}" mariadb-install-db --no-defaults --datadir="$DATA/mysql" --user=root --skip-test-db \
  --auth-root-authentication-method=socket >"$LOGS/mariadb-install-db.log" 2>&1
start mariadbd /usr/sbin/mariadbd --no-defaults --datadir="$DATA/mysql" --socket="$RUN/mysqld.sock" \
  --port=$DB_PORT --bind-address="$ES_IP" --user=root --pid-file="$RUN/mariadbd.pid" \
  --log-error="$LOGS/mariadbd.log" --skip-log-bin --innodb-buffer-pool-size=128M \
  --innodb-flush-log-at-trx-commit=0 --max-connections=1000 --character-set-server=utf8mb4 --skip-name-resolve
echo '[].' >"$ETC/rabbit_enabled_plugins"
printf 'listeners.tcp.1 = %s:%s\nloopback_users = none\ndefault_user = es\ndefault_pass = %s\nlog.file.level = warning\n' \
  "$ES_IP" "$RABBIT_PORT" "$SVC_PW" >"$ETC/rabbitmq.conf"
start epmd /usr/bin/epmd -address 127.0.0.1 -port $EPMD_PORT
start rabbitmq env HOME="$DATA/rabbit-home" RABBITMQ_NODENAME=es@localhost RABBITMQ_NODE_IP_ADDRESS="$ES_IP" \
  RABBITMQ_NODE_PORT=$RABBIT_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT ERL_EPMD_ADDRESS=127.0.0.1 \
  ERL_EPMD_PORT=$EPMD_PORT RABBITMQ_MNESIA_BASE="$DATA/rabbit" RABBITMQ_LOG_BASE="$LOGS/rabbit" \
  RABBITMQ_PID_FILE="$RUN/rabbitmq.pid" RABBITMQ_CONFIG_FILE="$ETC/rabbitmq" \
  RABBITMQ_ENABLED_PLUGINS_FILE="$ETC/rabbit_enabled_plugins" \
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
  /usr/lib/rabbitmq/bin/rabbitmq-server
wait_for "MariaDB" 60 mysql_es -e 'select 1'
{ echo "CREATE USER 'os'@'$ES_IP' IDENTIFIED BY '$DB_PW';"
  for d in keystone glance placement nova_api nova nova_cell0 neutron; do
    echo "CREATE DATABASE $d CHARACTER SET utf8mb4; GRANT ALL ON $d.* TO 'os'@'$ES_IP';"
  done; echo "FLUSH PRIVILEGES;"; } | mysql_es
wait_for "RabbitMQ on $ES_IP:$RABBIT_PORT" 120 port_open $RABBIT_PORT
TRANSPORT="rabbit://es:$SVC_PW@$ES_IP:$RABBIT_PORT/"

# ------------------------------------------------------------- Keystone
cat >"$ETC/keystone/keystone.conf" <<EOF
[DEFAULT]
log_file = $LOGS/keystone.log
[database]
connection = $DB/keystone
[token]
provider = fernet
[fernet_tokens]
key_repository = $DATA/keystone/fernet-keys
[credential]
key_repository = $DATA/keystone/credential-keys
EOF
kc=(--config-file "$ETC/keystone/keystone.conf")
t=$(date +%s.%N)
for c in db_sync "fernet_setup --keystone-user root --keystone-group root" \
    "credential_setup --keystone-user root --keystone-group root"; do
  # shellcheck disable=SC2086 # the sub-command's words
  "${IN[@]}" keystone-manage "${kc[@]}" $c >>"$LOGS/keystone-manage.log" 2>&1
done
"${IN[@]}" keystone-manage "${kc[@]}" bootstrap --bootstrap-password "$ADMIN_PW" --bootstrap-admin-url "$KS/v3/" \
  --bootstrap-internal-url "$KS/v3/" --bootstrap-public-url "$KS/v3/" --bootstrap-region-id RegionOne >>"$LOGS/keystone-manage.log" 2>&1
say "keystone-manage db_sync, fernet_setup, credential_setup, bootstrap: $(since "$t")s"
start keystone uwsgi --plugin python3 --http-socket "$ES_IP:5000" "${KEYSTONE_WSGI[@]}" \
  --master --processes 2 --threads 1 --lazy-apps --die-on-term --add-header "Connection: close" \
  --env "OS_KEYSTONE_CONFIG_FILES=$ETC/keystone/keystone.conf" --logto "$LOGS/keystone-uwsgi.log"
wait_for "Keystone on $KS" 90 port_open 5000
printf 'export OS_AUTH_URL=%s/v3 OS_IDENTITY_API_VERSION=3 OS_USERNAME=admin OS_PASSWORD=%s\nexport OS_PROJECT_NAME=admin OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default OS_REGION_NAME=RegionOne\n' \
  "$KS" "$ADMIN_PW" >"$ETC/admin-openrc"
os() { "${IN[@]}" sh -c '. "$0"; exec openstack "$@"' "$ETC/admin-openrc" "$@"; }
wait_for "Keystone token (openstack token issue)" 60 os token issue -f value -c id
say "token issued, expires $(os token issue -f value -c expires); $(os --version 2>&1)"
[ "${ES_STOP_AFTER:-}" = keystone ] && exit 0

# ------------------------------------------------------------- service users, catalog
# the lab's own script (lab/up.sh runs it on the host for Zed), here with the root's python3/keystoneclient
t=$(date +%s.%N)
"${IN[@]}" env ASAP2LAB_KS_URL="$KS" ASAP2LAB_ENDPOINT_HOST="$ES_IP" ASAP2LAB_ADMIN_PW="$ADMIN_PW" \
  ASAP2LAB_SERVICE_PW="$SVC_PW" ASAP2LAB_DEMO_PW="$(rand)" python3 "$LAB_DIR/lib/keystone_setup.py"
say "lab/lib/keystone_setup.py (users, roles, catalog) from the root: $(since "$t")s"
say "catalog ($(os endpoint list -f value | wc -l) endpoints)"
authtoken() {
  printf '[keystone_authtoken]\nwww_authenticate_uri = %s\nauth_url = %s\nauth_type = password\n' "$KS" "$KS"
  printf 'project_domain_name = Default\nuser_domain_name = Default\nproject_name = service\n'
  printf 'username = %s\npassword = %s\nregion_name = RegionOne\n' "$1" "$SVC_PW"
}
svcauth() {
  printf '[%s]\nauth_url = %s\nauth_type = password\nproject_domain_name = Default\n' "$1" "$KS"
  printf 'user_domain_name = Default\nproject_name = service\nusername = %s\npassword = %s\nregion_name = RegionOne\n' "$2" "$SVC_PW"
}

# ------------------------------------------------------------- Placement
{ printf '[DEFAULT]\nlog_file = %s\n[api]\nauth_strategy = keystone\n' "$LOGS/placement.log"
  printf '[placement_database]\nconnection = %s/placement\n' "$DB"
  authtoken placement; } >"$ETC/placement/placement.conf"
t=$(date +%s.%N)
"${IN[@]}" placement-manage --config-file "$ETC/placement/placement.conf" db sync >"$LOGS/placement-db-sync.log" 2>&1
say "placement-manage db sync: $(since "$t")s"
start placement uwsgi --plugin python3 --http-socket "$ES_IP:8778" "${PLACEMENT_WSGI[@]}" \
  --master --processes 1 --threads 4 --die-on-term --add-header "Connection: close" \
  --env "OS_PLACEMENT_CONFIG_DIR=$ETC/placement" --logto "$LOGS/placement-uwsgi.log"
# the root has no osc-placement plugin (not in Zed's lab either): an authenticated GET with curl
TOKEN=$(os token issue -f value -c id)
placement_ok() { ip netns exec "$ES_NS" curl -fsS -m 5 -H "X-Auth-Token: $TOKEN" -H "OpenStack-API-Version: placement latest" "http://$ES_IP:8778/resource_classes" | grep -q VCPU; }
wait_for "Placement (GET /resource_classes with a token)" 90 placement_ok
say "Placement max microversion: $(ip netns exec "$ES_NS" curl -fsS -m 5 "http://$ES_IP:8778/" | python3 -c 'import json,sys; print(json.load(sys.stdin)["versions"][0]["max_version"])')"
[ "${ES_STOP_AFTER:-}" = placement ] && exit 0

# ------------------------------------------------------------- Glance
"${IN[@]}" cp "$LAB_PASTE/glance-common/glance-api-paste.ini" "$ETC/glance/"
mkdir -p "$DATA/glance/staging" "$DATA/glance/tasks"
{ printf '[DEFAULT]\nlog_file = %s\nbind_host = %s\nbind_port = 9292\nenabled_backends = file:file\n' "$LOGS/glance-api.log" "$ES_IP"
  printf '[database]\nconnection = %s/glance\n[paste_deploy]\nflavor = keystone\nconfig_file = %s\n' "$DB" "$ETC/glance/glance-api-paste.ini"
  printf '[glance_store]\ndefault_backend = file\n[file]\nfilesystem_store_datadir = %s\n' "$DATA/glance/images"
  printf '[os_glance_staging_store]\nfilesystem_store_datadir = %s\n' "$DATA/glance/staging"
  printf '[os_glance_tasks_store]\nfilesystem_store_datadir = %s\n' "$DATA/glance/tasks"
  authtoken glance; } >"$ETC/glance/glance-api.conf"
t=$(date +%s.%N)
"${IN[@]}" "$LAB_DIR/lib/pyrun" glance-manage glance.cmd.manage --config-file "$ETC/glance/glance-api.conf" db_sync >"$LOGS/glance-db-sync.log" 2>&1
say "glance-manage db_sync: $(since "$t")s"
start glance-api "$LAB_DIR/lib/pyrun" glance-api glance.cmd.api --config-file "$ETC/glance/glance-api.conf"
wait_for "Glance (openstack image list)" 120 os image list
[ "${ES_STOP_AFTER:-}" = glance ] && exit 0

# ------------------------------------------------------------- Nova API, conductor, scheduler
"${IN[@]}" cp "$LAB_PASTE/nova-common/api-paste.ini" "$ETC/nova/api-paste.ini"
{ printf '[DEFAULT]\ntransport_url = %s\nstate_path = %s\nmy_ip = %s\n' "$TRANSPORT" "$DATA/nova" "$ES_IP"
  printf 'osapi_compute_listen = %s\nenabled_apis = osapi_compute\n' "$ES_IP"
  printf '[wsgi]\napi_paste_config = %s\n[api]\nauth_strategy = keystone\n' "$ETC/nova/api-paste.ini"
  printf '[oslo_concurrency]\nlock_path = %s/locks\n' "$DATA"
  printf '[api_database]\nconnection = %s/nova_api\n[database]\nconnection = %s/nova\n' "$DB" "$DB"
  authtoken nova; svcauth placement nova; svcauth service_user nova
  printf 'send_service_user_token = true\n'; svcauth neutron nova; } >"$ETC/nova/nova.conf"
nc=(--config-file "$ETC/nova/nova.conf")
t=$(date +%s.%N)
for c in "api_db sync" "cell_v2 map_cell0" "cell_v2 create_cell --name=cell1" "db sync"; do
  # shellcheck disable=SC2086 # the sub-command's words
  "${IN[@]}" "$LAB_DIR/lib/pyrun" nova-manage nova.cmd.manage "${nc[@]}" $c >>"$LOGS/nova-db-sync.log" 2>&1
done
say "nova-manage api_db sync, map_cell0, create_cell, db sync: $(since "$t")s"
for s in api conductor scheduler; do
  start "nova-$s" "$LAB_DIR/lib/pyrun" "nova-$s" "nova.cmd.$s" "${nc[@]}" --log-file "$LOGS/nova-$s.log"
done
wait_for "Nova API (openstack flavor list)" 120 os flavor list
nova_up() { [ "$(os compute service list -f value -c State | grep -c '^up$')" = 2 ]; }
wait_for "nova-conductor and nova-scheduler (compute service list: 2 up)" 120 nova_up
[ "${ES_STOP_AFTER:-}" = nova ] && exit 0

# ------------------------------------------------------------- neutron-server (ML2/OVS)
"${IN[@]}" cp "$LAB_PASTE/neutron-common/api-paste.ini" "$ETC/neutron/api-paste.ini"
{ printf '[DEFAULT]\ncore_plugin = ml2\nservice_plugins = router\nbind_host = %s\nbind_port = 9696\n' "$ES_IP"
  printf 'transport_url = %s\napi_paste_config = %s\nstate_path = %s\n' "$TRANSPORT" "$ETC/neutron/api-paste.ini" "$DATA/neutron"
  printf '[database]\nconnection = %s/neutron\n[oslo_concurrency]\nlock_path = %s/locks\n' "$DB" "$DATA"
  authtoken neutron; svcauth nova neutron; } >"$ETC/neutron/neutron.conf"
printf '[ml2]\ntype_drivers = flat,vxlan\ntenant_network_types = vxlan\nmechanism_drivers = openvswitch\nextension_drivers = port_security\n[ml2_type_vxlan]\nvni_ranges = 1:1000\n' \
  >"$ETC/neutron/ml2_conf.ini"
t=$(date +%s.%N)
"${IN[@]}" "$LAB_DIR/lib/pyrun" neutron-db-manage neutron.db.migration.cli --config-file "$ETC/neutron/neutron.conf" \
  --config-file "$ETC/neutron/ml2_conf.ini" upgrade head >"$LOGS/neutron-db-sync.log" 2>&1
say "neutron-db-manage upgrade head: $(since "$t")s"
start neutron-server "$LAB_DIR/lib/pyrun" neutron-server neutron.cmd.eventlet.server --config-file "$ETC/neutron/neutron.conf" \
  --config-file "$ETC/neutron/ml2_conf.ini" --log-file "$LOGS/neutron-server.log"
wait_for "neutron-server (openstack network list)" 180 os network list
say "all services answered their API from the root"
say "versions (lab/epoxy/versions.sh in the root):"
"${IN[@]}" sh "$EPOXY_DIR/versions.sh" | sed "s/^/  /"
