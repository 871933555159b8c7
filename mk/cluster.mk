# The local cluster of the distributed mode (included from the top-level Makefile):
# Redis (broker + result backend), a throwaway Postgres cluster under
# $(VERILEARN_HOME)/cluster/pg (the Dagster instance's storage) and N Celery workers,
# all on loopback, configured from configs/deploy.yaml (ports, user and database are read
# from its URLs; VERILEARN_BROKER_URL / _BACKEND_URL / _POSTGRES_URL / _CELERY_WORKERS
# override). Logs go to $(VERILEARN_HOME)/logs/cluster/. Both targets are idempotent.
#
#   make cluster-up     start what is not running yet (and write the generated dagster.yaml)
#   make cluster-down   stop the workers, Redis and Postgres (the data stays until `clean`)
#   make cluster-clean  cluster-down, then remove Postgres data kept outside the home (part of `clean`)
#   make cluster-deps   apt redis-server + postgresql when missing (part of `make test`)

CLUSTER_APT := redis-server postgresql
PG_BIN ?= $(firstword $(wildcard /usr/lib/postgresql/*/bin))
# Postgres refuses to run as root: as root, the cluster is owned by and run as this user.
PG_RUN_USER ?= postgres
# A pid that runs: present and not a zombie. A daemon that exited stays a zombie until the
# process that adopted it reaps it, which some machines' init does only every few seconds
# or minutes; `kill -0` succeeds on a zombie.
running = [ -n "$$(ps -o stat= -p $(1) 2>/dev/null | grep -v '^Z')" ]
CLUSTER_ENV = eval "$$($(VPY) -m verilearn_assets.core.deploy "$(VERILEARN_HOME)" "$(DAGSTER_HOME)")"
# As root, Postgres runs as $(PG_RUN_USER), which must enter its data directory. A home it
# cannot reach (a clone under /root: a 0700 parent) keeps the data and the server log in
# $(PG_RUN_USER)'s own home instead, one directory per cluster dir, linked from
# <home>/cluster/pg and <home>/logs/cluster/postgres.log; `make cluster-clean` removes it.
# (`$(call pg_outside,DIR)`: that directory for cluster dir DIR, in shell syntax.)
pg_outside = $$(getent passwd $(PG_RUN_USER) | cut -d: -f6)/verilearn/$$(printf %s "$(1)" | sha256sum | cut -c1-16)

.PHONY: cluster-deps cluster-up cluster-down cluster-clean

cluster-deps:
	@$(call apt_install,$(CLUSTER_APT))
	@# Debian starts a system-wide cluster/server on install; ours are private, on their own ports.

TEST_DEPS += cluster-deps

cluster-up: install cluster-deps
	@$(CLUSTER_ENV); \
	mkdir -p "$$CLUSTER_DIR/redis" "$$CLUSTER_LOGS"; \
	if redis-cli -h 127.0.0.1 -p $$REDIS_PORT ping >/dev/null 2>&1; then \
	  echo "redis: already answers on 127.0.0.1:$$REDIS_PORT"; \
	else \
	  redis-server --bind 127.0.0.1 --port $$REDIS_PORT --daemonize yes \
	    --dir "$$CLUSTER_DIR/redis" --pidfile "$$CLUSTER_DIR/redis/redis.pid" \
	    --logfile "$$CLUSTER_LOGS/redis.log" --save "" --appendonly no; \
	  for i in $$(seq 1 50); do redis-cli -h 127.0.0.1 -p $$REDIS_PORT ping >/dev/null 2>&1 && break; sleep 0.1; done; \
	  redis-cli -h 127.0.0.1 -p $$REDIS_PORT ping >/dev/null || { tail -5 "$$CLUSTER_LOGS/redis.log"; exit 1; }; \
	  echo "redis: started on 127.0.0.1:$$REDIS_PORT"; \
	fi; \
	PG="$$CLUSTER_DIR/pg"; PGLOG="$$CLUSTER_LOGS/postgres.log"; AS=""; \
	if [ "$$(id -u)" = 0 ]; then \
	  AS="runuser -u $(PG_RUN_USER) --"; \
	  if [ -L "$$PG" ] || { [ ! -e "$$PG" ] && ! $$AS test -x "$$CLUSTER_DIR"; }; then \
	    OUT="$(call pg_outside,$$CLUSTER_DIR)"; mkdir -p "$$OUT/pg"; touch "$$OUT/postgres.log"; \
	    ln -sfn "$$OUT/pg" "$$PG"; ln -sfn "$$OUT/postgres.log" "$$PGLOG"; \
	    PG="$$OUT/pg"; PGLOG="$$OUT/postgres.log"; \
	  fi; \
	  mkdir -p "$$PG"; touch "$$PGLOG"; \
	  chown $(PG_RUN_USER) "$$PG" "$$PGLOG"; chmod 700 "$$PG"; \
	  $$AS test -w "$$PG" || { echo "postgres: $(PG_RUN_USER) cannot enter $$PG (make its parents o+x, or use another VERILEARN_HOME)"; exit 1; }; \
	else mkdir -p "$$PG"; touch "$$PGLOG"; fi; \
	if [ ! -f "$$PG/PG_VERSION" ]; then \
	  $$AS $(PG_BIN)/initdb -D "$$PG" -U "$$PG_USER" --auth=trust -E UTF8 >>"$$PGLOG" 2>&1 \
	    || { tail -5 "$$PGLOG"; exit 1; }; \
	fi; \
	if $$AS $(PG_BIN)/pg_ctl -D "$$PG" status >/dev/null 2>&1; then \
	  echo "postgres: already running ($$PG)"; \
	else \
	  $$AS $(PG_BIN)/pg_ctl -D "$$PG" -l "$$PGLOG" -w -t 60 \
	    -o "-p $$PG_PORT -c listen_addresses=127.0.0.1 -k $$PG" start >/dev/null \
	    || { tail -5 "$$PGLOG"; exit 1; }; \
	  echo "postgres: started on 127.0.0.1:$$PG_PORT ($$PG)"; \
	fi; \
	$(PG_BIN)/psql -h 127.0.0.1 -p $$PG_PORT -U "$$PG_USER" -d postgres -tAc \
	  "SELECT 1 FROM pg_database WHERE datname='$$PG_DB'" | grep -q 1 \
	  || $(PG_BIN)/createdb -h 127.0.0.1 -p $$PG_PORT -U "$$PG_USER" "$$PG_DB"; \
	for i in $$(seq 1 $$WORKERS); do \
	  pidf="$$CLUSTER_DIR/celery/worker$$i.pid"; \
	  if [ -f "$$pidf" ] && $(call running,"$$(cat "$$pidf")"); then \
	    echo "celery: worker$$i already running (pid $$(cat "$$pidf"))"; continue; fi; \
	  rm -f "$$pidf"; wlog="$$CLUSTER_LOGS/worker$$i.log"; \
	  ready0=$$(grep -c ' ready\.$$' "$$wlog" 2>/dev/null || true); ready0=$${ready0:-0}; \
	  PYTHONPATH="$$CLUSTER_DIR/celery$${PYTHONPATH:+:$$PYTHONPATH}" VERILEARN_EXECUTOR=celery \
	  $(VENV)/bin/celery -A dagster_celery.app worker -Q "$$QUEUES" -c $$CONCURRENCY \
	    --prefetch-multiplier=1 -n "worker$$i@%h" --loglevel INFO --detach \
	    --pidfile "$$pidf" --logfile "$$CLUSTER_LOGS/worker$$i.log"; \
	  : "started = the worker logged a new 'ready.' (it consumes, its pool is forked, its pidfile"; \
	  : "is written); celery --detach writes and removes a probe pidfile before exec, so the"; \
	  : "pidfile alone is not a signal"; \
	  for t in $$(seq 1 240); do \
	    n=$$(grep -c ' ready\.$$' "$$wlog" 2>/dev/null || true); [ "$${n:-0}" -gt "$$ready0" ] && break; sleep 0.5; done; \
	  n=$$(grep -c ' ready\.$$' "$$wlog" 2>/dev/null || true); \
	  [ "$${n:-0}" -gt "$$ready0" ] && [ -s "$$pidf" ] \
	    || { echo "celery: worker$$i not ready after 120 s:"; tail -20 "$$wlog"; exit 1; }; \
	  echo "celery: worker$$i started (pid $$(cat "$$pidf"), queues $$QUEUES)"; \
	done; \
	echo "cluster up: dagster.yaml at $(DAGSTER_HOME), logs in $$CLUSTER_LOGS"

cluster-down:
	@$(CLUSTER_ENV); \
	for pidf in "$$CLUSTER_DIR"/celery/worker*.pid; do \
	  [ -f "$$pidf" ] || continue; pid=$$(cat "$$pidf"); \
	  if $(call running,"$$pid"); then \
	    kill -TERM "$$pid"; for t in $$(seq 1 100); do $(call running,"$$pid") || break; sleep 0.1; done; \
	    $(call running,"$$pid") && kill -KILL "$$pid"; \
	    echo "celery: stopped $$(basename "$$pidf" .pid) (pid $$pid)"; fi; \
	  rm -f "$$pidf"; \
	done; \
	if redis-cli -h 127.0.0.1 -p $$REDIS_PORT ping >/dev/null 2>&1; then \
	  redis-cli -h 127.0.0.1 -p $$REDIS_PORT shutdown nosave >/dev/null 2>&1 || true; \
	  echo "redis: stopped (127.0.0.1:$$REDIS_PORT)"; fi; \
	PG="$$CLUSTER_DIR/pg"; AS=""; [ "$$(id -u)" = 0 ] && AS="runuser -u $(PG_RUN_USER) --"; \
	[ -L "$$PG" ] && PG=$$(readlink "$$PG"); \
	if [ -f "$$PG/PG_VERSION" ] && $$AS $(PG_BIN)/pg_ctl -D "$$PG" status >/dev/null 2>&1; then \
	  $$AS $(PG_BIN)/pg_ctl -D "$$PG" -m fast -w stop >/dev/null; echo "postgres: stopped ($$PG)"; fi; \
	echo "cluster down"

# `make clean` stops the cluster and drops its data kept outside the home (see pg_outside).
cluster-clean: cluster-down
	@$(CLUSTER_ENV); PG="$$CLUSTER_DIR/pg"; \
	if [ -L "$$PG" ]; then \
	  OUT=$$(dirname "$$(readlink "$$PG")"); \
	  [ "$$OUT" = "$(call pg_outside,$$CLUSTER_DIR)" ] \
	    || { echo "postgres: $$PG links to $$OUT, not this cluster's own directory; left alone"; exit 1; }; \
	  rm -rf "$$OUT"; rm -f "$$PG" "$$CLUSTER_LOGS/postgres.log"; echo "postgres: removed $$OUT"; \
	fi

clean: cluster-clean

# A second Docker daemon on this machine, on its own socket, data and exec roots (no
# bridge, no iptables: sandbox containers have no network anyway), so the container
# pool's several-hosts mode is tested against real daemons (tests/sandbox/test_pool_hosts.py).
# Needs root (sudo when not root). The data root persists, so the imported scratch image
# is reused. Keep DOCKER2_DIR short: unix socket paths are capped at 108 bytes.
#
# It also listens on tcp://127.0.0.1:$(DOCKER2_TLS_PORT) with TLS (client certificates
# required), from a throwaway CA made with openssl under $(DOCKER2_DIR)/tls: ca.pem,
# cert.pem/key.pem for the client, server-*.pem for the daemon.
#
#   make docker2-up     start it (idempotent); prints its DOCKER_HOST URLs
#   make docker2-down   stop it (SIGTERM; its containers stop within --shutdown-timeout)
DOCKER2_DIR ?= /tmp/verilearn-docker2
DOCKER2_SOCK = $(DOCKER2_DIR)/docker.sock
DOCKER2_TLS_PORT ?= 23760
DOCKER2_TLS = $(DOCKER2_DIR)/tls

.PHONY: docker2-up docker2-down

docker2-up:
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	if docker -H "unix://$(DOCKER2_SOCK)" version >/dev/null 2>&1; then \
	  T="$(DOCKER2_TLS)"; docker -H "tcp://127.0.0.1:$(DOCKER2_TLS_PORT)" --tlsverify \
	    --tlscacert "$$T/ca.pem" --tlscert "$$T/cert.pem" --tlskey "$$T/key.pem" version >/dev/null 2>&1 \
	    || { echo "docker2: answers on unix://$(DOCKER2_SOCK) but not on its TLS port $(DOCKER2_TLS_PORT): make docker2-down first"; exit 1; }; \
	  echo "docker2: already answers on unix://$(DOCKER2_SOCK)"; exit 0; fi; \
	command -v dockerd >/dev/null || { echo "docker2: dockerd is not installed"; exit 1; }; \
	$$SUDO mkdir -p "$(DOCKER2_TLS)"; T="$(DOCKER2_TLS)"; \
	if [ ! -f "$$T/server-cert.pem" ]; then \
	  $$SUDO sh -c 'cd "$$1" && umask 077 && \
	    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=verilearn-test-ca \
	      -keyout ca-key.pem -out ca.pem && \
	    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server-key.pem -out server.csr && \
	    printf "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n" > server.ext && \
	    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
	      -extfile server.ext -out server-cert.pem && \
	    openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout key.pem -out client.csr && \
	    printf "extendedKeyUsage=clientAuth\n" > client.ext && \
	    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 \
	      -extfile client.ext -out cert.pem && chmod 644 ca.pem cert.pem key.pem' sh "$$T" \
	    >/dev/null 2>&1 || { echo "docker2: could not make TLS certificates in $$T"; exit 1; }; \
	fi; \
	( $$SUDO nohup dockerd --host "unix://$(DOCKER2_SOCK)" \
	    --host "tcp://127.0.0.1:$(DOCKER2_TLS_PORT)" --tlsverify --tlscacert "$$T/ca.pem" \
	    --tlscert "$$T/server-cert.pem" --tlskey "$$T/server-key.pem" \
	    --data-root "$(DOCKER2_DIR)/data" --exec-root "$(DOCKER2_DIR)/exec" \
	    --pidfile "$(DOCKER2_DIR)/dockerd.pid" --bridge=none --iptables=false --ip-masq=false \
	    --shutdown-timeout 2 >>"$(DOCKER2_DIR)/dockerd.log" 2>&1 & ); \
	for i in $$(seq 1 120); do docker -H "unix://$(DOCKER2_SOCK)" version >/dev/null 2>&1 && break; sleep 0.5; done; \
	docker -H "unix://$(DOCKER2_SOCK)" version >/dev/null 2>&1 \
	  || { echo "docker2: dockerd did not start:"; tail -20 "$(DOCKER2_DIR)/dockerd.log"; exit 1; }; \
	echo "docker2: started on unix://$(DOCKER2_SOCK) and tcp://127.0.0.1:$(DOCKER2_TLS_PORT) (TLS, $(DOCKER2_TLS))"

docker2-down:
	@SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); pidf="$(DOCKER2_DIR)/dockerd.pid"; \
	if [ -f "$$pidf" ] && $(call running,"$$(cat "$$pidf")"); then \
	  pid=$$(cat "$$pidf"); $$SUDO kill -TERM "$$pid"; \
	  for t in $$(seq 1 150); do $(call running,"$$pid") || break; sleep 0.2; done; \
	  $(call running,"$$pid") && { echo "docker2: pid $$pid did not stop in 30 s"; exit 1; }; \
	  echo "docker2: stopped (pid $$pid)"; \
	else echo "docker2: not running"; fi
