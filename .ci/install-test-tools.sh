#!/usr/bin/env bash
# install-test-tools.sh installs the third-party tools kiggy's interop tests and
# benchmarks drive, and prints what it installed:
#
#   kcat         Debian package (librdkafka-based producer/consumer CLI)
#   libhwloc15, libudev1
#                Debian packages the real iggy-server links (KIGGY_IGGY_SERVER,
#                default ../shared/iggy/bin/iggy-server, is not installed here)
#   tests/java/lib/
#                Apache Kafka 4.x from Maven Central: kafka-clients, kafka-tools
#                (ConsoleProducer, ProducerPerformance, ...), the broker
#                (kafka_2.13: kafka.Kafka, kafka.tools.StorageTool) and an slf4j
#                binding, via `mvn dependency:copy-dependencies` on tests/java/pom.xml
#   apache-iggy  the official Iggy Python SDK (wraps the Rust client), pinned
#   confluent-kafka, aiokafka, cramjam
#                Python Kafka clients for tests/ecosystem (the confluent-kafka
#                wheel bundles librdkafka; cramjam gives aiokafka snappy, lz4
#                and zstd), pinned
#   tests/node/node_modules/
#                kafkajs and its codecs for tests/ecosystem, `npm ci` from
#                tests/node/package-lock.json (lz4 and zstd-napi compile
#                native code: a few minutes on a fresh machine)
#   cargo, tests/iggycodec/target/release/iggycodec
#                a Rust toolchain >= 1.95 if cargo is missing or older
#                (rustup, minimal profile), then the iggycodec oracle,
#                `cargo build --release --locked` (about a minute on a fresh
#                machine)
#
# Idempotent and non-interactive; meant to run as root (CI runs it from .ci/run).
# When everything is already there it does no network I/O and takes about a
# second: apt is skipped if kcat is on PATH, Maven if lib/ was filled from the
# current pom.xml (a stamp holds the pom's hash), pip if the pinned version is
# installed, npm if node_modules matches the lock file.
set -euo pipefail

IGGY_PY_VERSION=0.9.0
# Kafka clients of tests/ecosystem (pip name==version).
ECOSYSTEM_PY=(confluent-kafka==2.16.1 aiokafka==0.14.0 cramjam==2.14.0)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
javadir="$root/tests/java"
lib="$javadir/lib"
stamp="$lib/.pom.sha256"
start=$SECONDS

log() { printf 'install-test-tools: %s\n' "$*"; }

# --- cargo and the iggycodec oracle (Rust; tests/iggycodec) --------------------
# tests/iggycodec wraps Apache Iggy's codec crate iggy_binary_protocol
# =0.11.1-edge.4 (edition 2024, rust-version 1.95), the differential oracle of
# internal/testing/iggycodec. Debian's cargo is older than that, so a missing or older
# cargo is replaced by rustup's minimal stable toolchain in ~/.cargo. Its
# crate `ring` compiles C, so a C compiler comes too. The build fetches crates
# only when Cargo.lock's are not in cargo's cache; when the binary is current
# cargo checks and returns in a fraction of a second.
RUST_MIN=1.95
iggycodec_manifest="$root/tests/iggycodec/Cargo.toml"
iggysdk_manifest="$root/tests/iggysdk/Cargo.toml"
if [[ -x "$HOME/.cargo/bin/cargo" && ":$PATH:" != *":$HOME/.cargo/bin:"* ]]; then
	export PATH="$HOME/.cargo/bin:$PATH"
fi
cargo_version() { cargo --version 2>/dev/null | awk '{print $2}'; }
have_cargo=$(cargo_version || true)
if [[ -z "$have_cargo" || "$(printf '%s\n%s\n' "$RUST_MIN" "$have_cargo" | sort -V | head -n1)" != "$RUST_MIN" ]]; then
	log "installing a Rust toolchain >= $RUST_MIN with rustup (had cargo ${have_cargo:-none})"
	if ! command -v curl >/dev/null 2>&1; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends curl ca-certificates >/dev/null
	fi
	curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
		sh -s -- -y -q --profile minimal --default-toolchain stable --no-modify-path
	export PATH="$HOME/.cargo/bin:$PATH"
	have_cargo=$(cargo_version)
fi
if ! command -v cc >/dev/null 2>&1; then
	log "installing gcc for ring's C code (apt)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends gcc libc6-dev >/dev/null
fi
# The two Rust builds are CPU-bound and the downloads below are not: they run
# in the background meanwhile, and the script waits for them at its end.
rust_log=$(mktemp)
(
	cargo build --release --locked --quiet --manifest-path "$iggycodec_manifest"
	iggysdk_start=$SECONDS
	cargo build --release --locked --quiet --manifest-path "$iggysdk_manifest"
	echo "$((SECONDS - iggysdk_start))" >"$rust_log.sdk"
) >"$rust_log" 2>&1 &
rust_pid=$!
# Helm (deploy/'s chart tests) is a Go build of the Kubernetes libraries:
# minutes the first time, so it runs in the background too.
HELM_VERSION=v4.3.2
helm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/kiggy-tools/helm-$HELM_VERSION"
helm_pid=
if [[ ! -x "$helm_dir/helm" ]]; then
	log "building helm $HELM_VERSION into $helm_dir in the background (go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION)"
	helm_log=$(mktemp)
	(GOBIN="$helm_dir" go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION") >"$helm_log" 2>&1 &
	helm_pid=$!
fi

# --- the official Rust SDK session (Rust; tests/iggysdk) -----------------------
# tests/iggysdk drives iggytest with Apache Iggy's official Rust SDK, crate
# iggy =0.11.1-edge.4 (protocol 0.12.0), for iggytest's TestOfficialSDK012.
# The crate has no optional features: its HTTP, QUIC and WebSocket clients
# and aws-lc (C, via reqwest's rustls) always build: a clean build costs
# about 10 CPU-minutes, an estimated 5 to 6 minutes on two idle cores, more
# on a loaded machine (tests/iggysdk/README.md has the numbers); a current
# binary costs a fraction of a second. It needs the cargo and C compiler the
# iggycodec block above installed.
# (built in the background with iggycodec above)

# --- kcat (Debian) -----------------------------------------------------------
if ! command -v kcat >/dev/null 2>&1; then
	log "installing kcat (apt)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends kcat >/dev/null 2>&1 || apt-get install -y --no-install-recommends kcat
fi
log "kcat: $(command -v kcat) ($(dpkg-query -W -f='${Version}' kcat 2>/dev/null || echo '?'); $(kcat -V 2>&1 | grep -o 'librdkafka [0-9][^ ]*' | head -n1 || true))"

# --- iggy-server's run-time libraries (Debian) ---------------------------------
# The real iggy-server the Iggy-backend tests start (KIGGY_IGGY_SERVER, default
# ../shared/iggy/bin/iggy-server) links libhwloc and libudev.
libs=$(ldconfig -p)
if [[ $libs != *libhwloc.so.15* || $libs != *libudev.so.1* ]]; then
	log "installing libhwloc15 and libudev1 for iggy-server (apt)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends libhwloc15 libudev1 >/dev/null
fi
iggy_bin=${KIGGY_IGGY_SERVER:-$(dirname "$root")/shared/iggy/bin/iggy-server}
if [[ -x "$iggy_bin" ]]; then
	log "iggy-server: $iggy_bin ($("$iggy_bin" --version 2>&1 | head -n1))"
else
	log "iggy-server: none at $iggy_bin (set KIGGY_IGGY_SERVER); the real-server tests will skip, or fail under KIGGY_REQUIRE_TOOLS=1"
fi

# --- Java: Maven must be there; both come with the machine image ------------
for tool in java javac mvn; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		log "$tool missing: installing openjdk-17-jdk-headless and maven (apt)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven >/dev/null
		break
	fi
done

# --- Kafka 4.x jars (Maven Central) ------------------------------------------
want=$(sha256sum "$javadir/pom.xml" | cut -d' ' -f1)
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
	log "fetching Kafka jars into tests/java/lib (mvn dependency:copy-dependencies)"
	rm -rf "$lib"
	mvn -B -q -Dstyle.color=never -f "$javadir/pom.xml" dependency:copy-dependencies
	echo "$want" >"$stamp"
fi
kafka_jar=$(cd "$lib" && ls kafka-clients-*.jar 2>/dev/null | head -n1)
log "java: $(java -version 2>&1 | head -n1); $(ls "$lib"/*.jar | wc -l) jars in tests/java/lib ($(du -sh "$lib" | cut -f1)), ${kafka_jar:-kafka-clients MISSING}"
if [[ -z "$kafka_jar" ]]; then
	log "kafka-clients jar missing after mvn; delete tests/java/lib and retry"
	exit 1
fi

# --- apache-iggy (PyPI) -------------------------------------------------------
if ! command -v python3 >/dev/null 2>&1; then
	log "python3 missing"
	exit 1
fi
# One interpreter start (a pyenv shim costs seconds on a loaded machine):
# the real executable, its version, and the installed apache-iggy version.
pyinfo() {
	python3 -c 'import sys, importlib.metadata as m
try:
    v = m.version("apache-iggy")
except m.PackageNotFoundError:
    v = "none"
print(sys.executable, sys.version.split()[0], v)'
}
read -r py pyver have < <(pyinfo)
if [[ "$have" != "$IGGY_PY_VERSION" ]]; then
	log "installing apache-iggy==$IGGY_PY_VERSION (pip; had $have)"
	"$py" -m pip install -q --disable-pip-version-check "apache-iggy==$IGGY_PY_VERSION"
	read -r py pyver have < <(pyinfo)
fi
"$py" -c 'import apache_iggy' # fail here, not in a test, if the wheel does not load
log "python: $py ($pyver); apache-iggy $have"

# --- Python Kafka clients (PyPI) ----------------------------------------------
# Prints the pins that are not installed at their version, in one start.
missing=$("$py" -c 'import sys, importlib.metadata as m
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        have = m.version(name)
    except m.PackageNotFoundError:
        have = None
    if have != want:
        print(pin)' "${ECOSYSTEM_PY[@]}")
if [[ -n "$missing" ]]; then
	log "installing $(echo $missing) (pip)"
	# shellcheck disable=SC2086 # one pin a word
	"$py" -m pip install -q --disable-pip-version-check $missing
fi
"$py" -c 'import confluent_kafka, aiokafka, cramjam' # fail here if a wheel does not load
log "python kafka clients: ${ECOSYSTEM_PY[*]}"

# --- kafkajs and its codecs (npm) ---------------------------------------------
nodedir="$root/tests/node"
for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		log "$tool missing: installing nodejs and npm (apt)"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
		break
	fi
done
# A stamp in node_modules holds the hash of the lock file npm ci installed.
nodestamp="$nodedir/node_modules/.kiggy-lock.sha256"
nodewant=$(sha256sum "$nodedir/package-lock.json" | cut -d' ' -f1)
if [[ ! -f "$nodestamp" || "$(cat "$nodestamp")" != "$nodewant" ]]; then
	log "installing kafkajs and codecs into tests/node/node_modules (npm ci)"
	(cd "$nodedir" && npm ci --no-audit --no-fund --loglevel=error)
	echo "$nodewant" >"$nodestamp"
fi
(cd "$nodedir" && node -e 'require("kafkajs"); require("kafkajs-snappy"); require("kafkajs-lz4"); require("zstd-napi")')
log "node: $(node --version); kafkajs $(cd "$nodedir" && node -p 'require("kafkajs/package.json").version')"

# --- promtool, helm, buildah (deploy/: rules, chart, image) -------------------
# deploy/'s tests run `promtool check rules` and `promtool test rules` on
# deploy/prometheus/ (Debian package prometheus: promtool 2.42 on bookworm),
# and start its Prometheus server on loopback to run every query of the
# Grafana dashboard against live kiggy processes (TestDashboardLive); build deploy/Containerfile
# with buildah (vfs storage, chroot isolation), unpack the image with umoci
# and run it from its root (TestImage; its Go build stage runs on a local
# image of this machine's Go and busybox-static, Docker Hub being out of
# reach: about a minute and a half, 300 MB in the user cache); and lint and render
# deploy/helm/kiggy with Helm built from its Go module at a pinned version
# (HELM_VERSION, the same as helmVersion in deploy/tools_test.go) into the
# user cache, where the tests look (KIGGY_HELM overrides). A clean build
# compiles the Kubernetes client libraries: minutes on two shared cores; a
# present binary costs nothing.
if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1 || ! command -v buildah >/dev/null 2>&1 ||
	! command -v umoci >/dev/null 2>&1 || [[ ! -x /bin/busybox ]]; then
	log "installing promtool, buildah, umoci and busybox-static (apt)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends prometheus buildah umoci busybox-static >/dev/null
fi
log "promtool: $(command -v promtool) ($(promtool --version 2>&1 | head -n1 | awk '{print $3}')); prometheus: $(command -v prometheus)"
log "buildah: $(buildah --version | awk '{print $3}'); umoci $(umoci --version | awk '{print $3}')"
# (helm is built in the background from the top of the script; see the end)

# --- wait for the Rust builds started at the top ---------------------------------
if ! wait "$rust_pid"; then
	cat "$rust_log" >&2
	log "the Rust builds failed (tests/iggycodec, tests/iggysdk)"
	exit 1
fi
iggycodec_bin="$root/tests/iggycodec/target/release/iggycodec"
log "iggycodec: $iggycodec_bin (cargo $have_cargo; answers version $(echo version | "$iggycodec_bin"))"
log "iggysdk: $root/tests/iggysdk/target/release/iggysdk (cargo $have_cargo; built in $(cat "$rust_log.sdk")s)"
rm -f "$rust_log" "$rust_log.sdk"

if [[ -n "$helm_pid" ]] && ! wait "$helm_pid"; then
	cat "$helm_log" >&2
	log "building helm $HELM_VERSION failed"
	exit 1
fi
log "helm: $helm_dir/helm ($(go version -m "$helm_dir/helm" | awk '$1 == "mod" {print $2, $3}'))"

log "done in $((SECONDS - start))s"
