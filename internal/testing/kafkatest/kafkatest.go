// Package kafkatest runs a real Apache Kafka 4.x broker for tests and
// benchmarks: one KRaft node (broker and controller in one JVM) on free
// 127.0.0.1 ports, its storage formatted in a fresh directory, started from
// the jars that .ci/install-test-tools.sh puts in tests/java/lib.
//
// Start is for tests (it skips, or fails under KIGGY_REQUIRE_TOOLS=1, when Java
// or the jars are missing, and stops the broker when the test ends);
// StartProcess is the same without a testing.TB, for the benchmark harness,
// which must call Broker.Stop itself.
package kafkatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// NodeID is the broker's (and controller's) node id.
const NodeID = 1

// Config configures a broker. The zero value means: Java and the classpath
// from testtools.FindJava, a 1 GiB heap, Kafka's defaults for a single node
// (replication factors 1), broker log at warn, and 2 minutes to start.
type Config struct {
	// Java is the java launcher ("" = testtools.FindJava).
	Java string
	// Classpath holds the Kafka broker jars ("" = testtools.FindJava's,
	// tests/java/lib/*).
	Classpath string
	// Heap is the JVM heap, used for both -Xms and -Xmx, as the JVM spells
	// it ("" = "1g", what kafka-server-start.sh uses).
	Heap string
	// Props overrides or adds server.properties entries; the listener and
	// KRaft quorum entries are set by the package and cannot be overridden.
	Props map[string]string
	// StandardAuthorizer turns on Kafka's KRaft ACL authorizer
	// (authorizer.class.name = StandardAuthorizerClass) with User:ANONYMOUS
	// a super user (super.users), so that tools on the plaintext listener
	// can manage ACLs and the node's own listeners keep working. Props may
	// override super.users.
	StandardAuthorizer bool
	// LogLevel is the slf4j-simple level of the broker's log, written to
	// Broker.LogPath ("" = "warn"; "info" for Kafka's usual chatter).
	LogLevel string
	// StartTimeout bounds the wait until the broker answers Metadata
	// (0 = 2 minutes).
	StartTimeout time.Duration
	// StopTimeout bounds the wait for the JVM to exit after SIGTERM before
	// it is killed (0 = 60 seconds).
	StopTimeout time.Duration
	// SSL, when set, adds an SSL listener (Broker.SSLAddr) beside the
	// PLAINTEXT one.
	SSL *SSL
	// SASL, when set, adds a SASL_PLAINTEXT listener (Broker.SASLAddr)
	// offering PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; with SSL also set, a
	// SASL_SSL listener offering the same (Broker.SASLSSLAddr).
	SASL *SASLConfig
}

// SASLConfig is the SASL listener's users.
type SASLConfig struct {
	// PlainUsers are the PLAIN users (name → password), in the listener's
	// PlainLoginModule JAAS config.
	PlainUsers map[string]string
	// ScramUsers get SCRAM-SHA-256 and SCRAM-SHA-512 credentials (4096
	// iterations) when the storage is formatted (kafka-storage format
	// --add-scram).
	ScramUsers map[string]string
}

// SSL configures the broker's SSL listener with PEM files (Kafka's
// ssl.keystore.type=PEM and ssl.truststore.type=PEM).
type SSL struct {
	// KeystoreFile holds the broker's unencrypted PKCS #8 private key and
	// its certificate chain, in one PEM file (ssl.keystore.location).
	KeystoreFile string
	// TruststoreFile holds the CA certificates client certificates are
	// verified against (ssl.truststore.location); "" = none.
	TruststoreFile string
	// ClientAuth is ssl.client.auth: none, requested or required
	// ("" = none).
	ClientAuth string
	// PrincipalMappingRules is ssl.principal.mapping.rules ("" = DEFAULT).
	PrincipalMappingRules string
}

func (c *Config) normalize() error {
	if c.Java == "" || c.Classpath == "" {
		java, cp, err := testtools.FindJava()
		if err != nil {
			return fmt.Errorf("kafkatest: %w (%s)", err, testtools.Install)
		}
		if c.Java == "" {
			c.Java = java
		}
		if c.Classpath == "" {
			c.Classpath = cp
		}
	}
	if c.Heap == "" {
		c.Heap = "1g"
	}
	if c.LogLevel == "" {
		c.LogLevel = "warn"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 2 * time.Minute
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = time.Minute
	}
	for k := range c.Props {
		if fixedProps[k] {
			return fmt.Errorf("kafkatest: property %s is set by kafkatest and cannot be overridden", k)
		}
	}
	return nil
}

// fixedProps are the server.properties keys kafkatest owns: they tie the
// node to its ports and directory.
var fixedProps = map[string]bool{
	"process.roles":                       true,
	"node.id":                             true,
	"controller.quorum.voters":            true,
	"controller.quorum.bootstrap.servers": true,
	"listeners":                           true,
	"advertised.listeners":                true,
	"controller.listener.names":           true,
	"inter.broker.listener.name":          true,
	"listener.security.protocol.map":      true,
	"log.dirs":                            true,
	"log.dir":                             true,
	"metadata.log.dir":                    true,
}

// defaultProps are Kafka's defaults adjusted for one node, as in the
// config/server.properties Kafka ships.
var defaultProps = map[string]string{
	"num.partitions":                                   "1",
	"offsets.topic.replication.factor":                 "1",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"group.initial.rebalance.delay.ms":                 "0",
	"auto.create.topics.enable":                        "true",
}

// StandardAuthorizerClass is Kafka's KRaft ACL authorizer.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Broker is a running Kafka broker process.
type Broker struct {
	// Addr is the host:port of the PLAINTEXT listener clients bootstrap from.
	Addr string
	// SSLAddr is the host:port of the SSL listener (Config.SSL), else "".
	SSLAddr string
	// SASLSSLAddr is the host:port of the SASL_SSL listener (Config.SASL
	// and Config.SSL both set), else "".
	SASLSSLAddr string
	// SASLAddr is the host:port of the SASL_PLAINTEXT listener
	// (Config.SASL), else "".
	SASLAddr string
	// ControllerAddr is the host:port of the KRaft controller listener.
	ControllerAddr string
	// Pid is the JVM's process id.
	Pid int
	// Dir is the directory holding server.properties, the data and the log.
	Dir string
	// LogPath is the file the JVM's stdout and stderr go to.
	LogPath string

	cfg      Config
	cmd      *exec.Cmd
	exited   chan struct{} // closed once cmd.Wait returned
	waitErr  error         // cmd.Wait's result, set before exited is closed
	stopOnce sync.Once
	stopErr  error
}

// Start starts a broker with the default Config in a temporary directory and
// stops it (waiting for the JVM to exit) when t ends. It skips t when Java or
// the Kafka jars are missing (fails under KIGGY_REQUIRE_TOOLS=1).
func Start(t testing.TB) *Broker {
	t.Helper()
	return StartConfig(t, Config{})
}

// StartConfig is Start with a Config.
func StartConfig(t testing.TB, cfg Config) *Broker {
	t.Helper()
	if cfg.Java == "" || cfg.Classpath == "" {
		java, cp := testtools.JavaClasspath(t)
		if cfg.Java == "" {
			cfg.Java = java
		}
		if cfg.Classpath == "" {
			cfg.Classpath = cp
		}
	}
	b, err := StartProcess(t.TempDir(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafkatest: last lines of %s:\n%s", b.LogPath, b.LogTail(30))
		}
		if err := b.Stop(); err != nil {
			t.Errorf("kafkatest: %v", err)
		}
	})
	return b
}

var shared struct {
	once sync.Once
	b    *Broker
	dir  string
	err  error
}

// Shared returns the test process's one broker, started with cfg on first
// use (later calls get that broker whatever their cfg) in a temporary
// directory; StopShared, from TestMain, stops it. Like StartConfig it skips
// t when Java or the Kafka jars are missing.
func Shared(t testing.TB, cfg Config) *Broker {
	t.Helper()
	java, cp := testtools.JavaClasspath(t)
	shared.once.Do(func() {
		if cfg.Java == "" {
			cfg.Java = java
		}
		if cfg.Classpath == "" {
			cfg.Classpath = cp
		}
		if shared.dir, shared.err = os.MkdirTemp("", "kiggy-kafkatest-"); shared.err != nil {
			return
		}
		shared.b, shared.err = StartProcess(shared.dir, cfg)
	})
	if shared.err != nil {
		t.Fatalf("starting the Kafka broker: %v", shared.err)
	}
	return shared.b
}

// StopShared stops the broker Shared started, if any, and removes its
// directory.
func StopShared() error {
	var err error
	if shared.b != nil {
		err = shared.b.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return err
}

// StartProcess formats a single-node KRaft storage under dir (which should be
// empty) and starts a broker from it, returning once the broker accepts
// connections on 127.0.0.1 and answers Metadata listing itself. The caller
// must call Stop. A port taken between choosing and binding it is retried
// with new ports.
func StartProcess(dir string, cfg Config) (*Broker, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var b *Broker
		b, err = startOnce(dir, cfg)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

var errPortTaken = errors.New("kafkatest: a chosen port was taken before the broker bound it")

func startOnce(dir string, cfg Config) (*Broker, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	b := &Broker{
		Addr:           net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		ControllerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
		Dir:            dir,
		LogPath:        filepath.Join(dir, "broker.log"),
		cfg:            cfg,
	}
	if cfg.SASL != nil {
		b.SASLAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3]))
	}
	if cfg.SSL != nil {
		b.SSLAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2]))
	}
	if cfg.SSL != nil && cfg.SASL != nil {
		b.SASLSSLAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[4]))
	}
	data := filepath.Join(dir, "data")
	if err := os.RemoveAll(data); err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, b.properties(data), 0o644); err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	if err := b.format(propsPath); err != nil {
		return nil, err
	}

	logf, err := os.Create(b.LogPath)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	if err := b.launch(logf); err != nil {
		return nil, err
	}
	if err := b.waitReady(cfg.StartTimeout); err != nil {
		_ = b.Stop()
		tail := b.LogTail(30)
		if strings.Contains(tail, "Address already in use") {
			return nil, fmt.Errorf("%w: %v", errPortTaken, err)
		}
		return nil, fmt.Errorf("%v; last lines of %s:\n%s", err, b.LogPath, tail)
	}
	return b, nil
}

// launch starts the JVM from the server.properties in b.Dir, its output
// going to logf, which it closes when the JVM exits.
func (b *Broker) launch(logf *os.File) error {
	b.exited = make(chan struct{})
	b.cmd = exec.Command(b.cfg.Java, b.jvmArgs("kafka.Kafka", filepath.Join(b.Dir, "server.properties"))...)
	b.cmd.Dir = b.Dir
	b.cmd.Stdout = logf
	b.cmd.Stderr = logf
	b.cmd.SysProcAttr = sysProcAttr()
	if err := b.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("kafkatest: starting %s: %w", b.cfg.Java, err)
	}
	b.Pid = b.cmd.Process.Pid
	cmd, exited := b.cmd, b.exited
	go func() {
		b.waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	return nil
}

// Kill9AndRestart kills the broker's JVM with SIGKILL and starts it again
// over the same data and ports (Kafka's recovery after an unclean
// shutdown), returning once it answers Metadata again. Not for a Shared
// broker, whose other users it would disturb.
func (b *Broker) Kill9AndRestart() error {
	_ = b.cmd.Process.Kill()
	<-b.exited
	logf, err := os.OpenFile(b.LogPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	b.stopOnce = sync.Once{}
	if err := b.launch(logf); err != nil {
		return err
	}
	if err := b.waitReady(b.cfg.StartTimeout); err != nil {
		return fmt.Errorf("kafkatest: after a restart: %v; last lines of %s:\n%s", err, b.LogPath, b.LogTail(30))
	}
	return nil
}

func (b *Broker) properties(data string) []byte {
	props := maps.Clone(defaultProps)
	if b.cfg.StandardAuthorizer {
		props["authorizer.class.name"] = StandardAuthorizerClass
		props["super.users"] = "User:ANONYMOUS"
	}
	maps.Copy(props, b.cfg.Props)
	props["process.roles"] = "broker,controller"
	props["node.id"] = strconv.Itoa(NodeID)
	props["controller.quorum.voters"] = fmt.Sprintf("%d@%s", NodeID, b.ControllerAddr)
	props["listeners"] = "PLAINTEXT://" + b.Addr + ",CONTROLLER://" + b.ControllerAddr
	props["advertised.listeners"] = "PLAINTEXT://" + b.Addr
	props["controller.listener.names"] = "CONTROLLER"
	props["inter.broker.listener.name"] = "PLAINTEXT"
	props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	if sc := b.cfg.SASL; sc != nil {
		props["listeners"] += ",SASL_PLAINTEXT://" + b.SASLAddr
		props["advertised.listeners"] += ",SASL_PLAINTEXT://" + b.SASLAddr
		props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
		props["sasl.enabled.mechanisms"] = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
		jaas := "org.apache.kafka.common.security.plain.PlainLoginModule required"
		for _, u := range slices.Sorted(maps.Keys(sc.PlainUsers)) {
			jaas += fmt.Sprintf(" user_%s=%q", u, sc.PlainUsers[u])
		}
		lns := []string{"sasl_plaintext"}
		if b.SASLSSLAddr != "" {
			lns = append(lns, "sasl_ssl")
			props["listeners"] += ",SASL_SSL://" + b.SASLSSLAddr
			props["advertised.listeners"] += ",SASL_SSL://" + b.SASLSSLAddr
			props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
		}
		for _, ln := range lns {
			props["listener.name."+ln+".plain.sasl.jaas.config"] = jaas + ";"
			for _, m := range []string{"scram-sha-256", "scram-sha-512"} {
				props["listener.name."+ln+"."+m+".sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
			}
		}
	}
	if ssl := b.cfg.SSL; ssl != nil {
		props["listeners"] += ",SSL://" + b.SSLAddr
		props["advertised.listeners"] += ",SSL://" + b.SSLAddr
		props["listener.security.protocol.map"] += ",SSL:SSL"
		props["ssl.keystore.type"] = "PEM"
		props["ssl.keystore.location"] = ssl.KeystoreFile
		if ssl.TruststoreFile != "" {
			props["ssl.truststore.type"] = "PEM"
			props["ssl.truststore.location"] = ssl.TruststoreFile
		}
		if ssl.ClientAuth != "" {
			props["ssl.client.auth"] = ssl.ClientAuth
		}
		if ssl.PrincipalMappingRules != "" {
			props["ssl.principal.mapping.rules"] = ssl.PrincipalMappingRules
		}
	}
	props["log.dirs"] = data

	var buf bytes.Buffer
	buf.WriteString("# written by kiggy internal/testing/kafkatest\n")
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&buf, "%s=%s\n", k, escapeProp(props[k]))
	}
	return buf.Bytes()
}

// escapeProp escapes a value for java.util.Properties (backslashes, and
// leading spaces, which the format would otherwise drop).
func escapeProp(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	if strings.HasPrefix(v, " ") {
		v = `\` + v
	}
	return v
}

func (b *Broker) jvmArgs(mainClass string, args ...string) []string {
	jvm := []string{
		"-Xms" + b.cfg.Heap, "-Xmx" + b.cfg.Heap,
		// kafka-server-start.sh's GC settings.
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=" + b.cfg.LogLevel,
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", b.cfg.Classpath,
		mainClass,
	}
	return append(jvm, args...)
}

// format runs Kafka's storage tool: KRaft needs a formatted metadata log
// carrying the cluster id before the node starts.
func (b *Broker) format(propsPath string) error {
	id, err := clusterID()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{
		"-Xmx256m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", b.cfg.Classpath, "kafka.tools.StorageTool",
		"format", "--cluster-id", id, "--config", propsPath,
	}
	if sc := b.cfg.SASL; sc != nil {
		for _, u := range slices.Sorted(maps.Keys(sc.ScramUsers)) {
			for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
				args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", m, u, sc.ScramUsers[u]))
			}
		}
	}
	cmd := exec.CommandContext(ctx, b.cfg.Java, args...)
	cmd.Dir = b.Dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("kafkatest: formatting KRaft storage (kafka.tools.StorageTool format): %v\n%s", err, out)
	}
	return nil
}

// clusterID returns a random cluster id as Kafka's Uuid prints one: 16
// bytes, URL-safe base64 without padding. Like Kafka's Uuid.randomUuid it
// never starts with '-', which the storage tool's argument parser would
// take for an option (1 start in 64 failed with "argument
// --cluster-id/-t: expected one argument").
func clusterID() (string, error) {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return "", fmt.Errorf("kafkatest: %w", err)
		}
		if id := base64.RawURLEncoding.EncodeToString(u[:]); id[0] != '-' {
			return id, nil
		}
	}
}

// freePorts returns n distinct ports that were free a moment ago, drawn
// below the ephemeral range (testtools.FreePort), for the broker to bind.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := testtools.FreePort()
		if err != nil {
			return nil, fmt.Errorf("kafkatest: %w", err)
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// waitReady waits until the broker accepts a connection and answers a
// Metadata request that lists itself as a broker and names a controller.
func (b *Broker) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		select {
		case <-b.exited:
			return fmt.Errorf("kafkatest: broker (pid %d) exited before it was ready: %v", b.Pid, b.waitErr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafkatest: broker at %s not ready after %v: %v", b.Addr, timeout, last)
		}
		last = b.ping(5 * time.Second)
		if last == nil {
			return nil
		}
		select {
		case <-b.exited:
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (b *Broker) ping(timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", b.Addr, timeout)
	if err != nil {
		return err
	}
	conn.Close()

	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr),
		kgo.DialTimeout(timeout),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(timeout),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if resp.ControllerID < 0 {
		return errors.New("metadata: no controller yet")
	}
	for _, br := range resp.Brokers {
		if br.NodeID == NodeID && net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))) == b.Addr {
			return nil
		}
	}
	return fmt.Errorf("metadata: broker %d at %s not listed yet", NodeID, b.Addr)
}

// Exited is closed once the JVM has exited.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// Stop sends SIGTERM (Kafka's controlled shutdown), waits for the JVM to
// exit, and kills it if it has not within Config.StopTimeout. It returns an
// error if the JVM had to be killed or exited with a failure other than
// being terminated. Later calls return the first call's result.
func (b *Broker) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.stop() })
	return b.stopErr
}

func (b *Broker) stop() error {
	select {
	case <-b.exited:
		return b.exitError()
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
		return b.exitError()
	case <-time.After(b.cfg.StopTimeout):
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
	return fmt.Errorf("kafkatest: broker (pid %d) ignored SIGTERM for %v and was killed", b.Pid, b.cfg.StopTimeout)
}

func (b *Broker) exitError() error {
	var ee *exec.ExitError
	if b.waitErr == nil {
		return nil
	}
	if errors.As(b.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
		if ee.ExitCode() == 143 { // 128+SIGTERM, as the JVM reports it
			return nil
		}
	}
	return fmt.Errorf("kafkatest: broker (pid %d) exited: %v", b.Pid, b.waitErr)
}

// LogTail returns the last n lines of the broker's log.
func (b *Broker) LogTail(n int) string { return testtools.FileTail(b.LogPath, n) }
