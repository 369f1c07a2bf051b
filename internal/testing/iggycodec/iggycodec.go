// Package iggycodec runs the differential oracle for kiggy's Iggy binary
// protocol 0.12 codec: tests/iggycodec, a small Rust program around Apache
// Iggy's own codec crate iggy_binary_protocol =0.11.1-edge.4 (protocol
// 0.12.0, the protocol of the released server Apache Iggy 0.10.0). The line
// protocol it speaks is in tests/iggycodec/README.md.
//
// [Start] builds the program with cargo when its binary is missing or older
// than its sources and starts one process per test binary; every test of the
// binary shares it. The process ends when the test binary exits (it reads
// end-of-file on its standard input), or at [Oracle.Close].
//
// It is a test helper: it needs cargo (or a built binary), and without one
// [Start] skips the test, or fails it when the environment has CI set or
// KIGGY_REQUIRE_TOOLS=1.
package iggycodec

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// ManifestDir is the crate's directory, relative to the repository root.
const ManifestDir = "tests/iggycodec"

// Refused is the oracle's "err" answer: the crate refused the input (a
// frame or body it does not accept), or the command does not apply.
type Refused struct {
	Command string
	Reason  string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("iggycodec %s: %s", e.Command, e.Reason)
}

// Oracle is a running iggycodec process. Its methods are safe for
// concurrent use; each sends one command and reads one answer line.
type Oracle struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
	dead   error
}

var (
	once     sync.Once
	shared   *Oracle
	startErr error
	skipWhy  string
)

// Start returns the test binary's oracle, building and starting it on the
// first call. Without cargo and without a built binary it skips t (fails it
// under CI or KIGGY_REQUIRE_TOOLS=1); a failed build or start fails t.
func Start(t testing.TB) *Oracle {
	t.Helper()
	once.Do(func() { shared, skipWhy, startErr = start() })
	if skipWhy != "" {
		if os.Getenv("CI") != "" || os.Getenv("KIGGY_REQUIRE_TOOLS") == "1" {
			t.Fatalf("iggycodec: %s", skipWhy)
		}
		t.Skipf("skipping: iggycodec: %s (CI or KIGGY_REQUIRE_TOOLS=1 fails instead)", skipWhy)
	}
	if startErr != nil {
		t.Fatalf("iggycodec: %v", startErr)
	}
	return shared
}

// Binary returns the path of the built oracle under root.
func Binary(root string) string {
	name := "iggycodec"
	if filepath.Separator == '\\' {
		name += ".exe"
	}
	return filepath.Join(root, filepath.FromSlash(ManifestDir), "target", "release", name)
}

// start builds the binary if needed and starts it. It returns a reason to
// skip when cargo is missing, or an error when a build or start fails.
func start() (*Oracle, string, error) {
	root, err := testtools.RepoRoot()
	if err != nil {
		return nil, "", err
	}
	bin := Binary(root)
	stale, err := stale(root, bin)
	if err != nil {
		return nil, "", err
	}
	if stale {
		cargo, lookErr := exec.LookPath("cargo")
		switch {
		case lookErr == nil:
			if err := build(root, cargo); err != nil {
				return nil, "", err
			}
		case fileExists(bin):
			// An old binary beats none; its answers may predate the sources.
			fmt.Fprintf(os.Stderr, "iggycodec: cargo not found, using %s although it is older than its sources\n", bin)
		default:
			return nil, fmt.Sprintf("cargo not found and %s not built (.ci/install-test-tools.sh installs both)", bin), nil
		}
	}
	o, err := run(bin)
	return o, "", err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// stale reports whether bin is missing or older than any of the crate's
// sources (Cargo.toml, Cargo.lock, src/**).
func stale(root, bin string) (bool, error) {
	info, err := os.Stat(bin)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	built := info.ModTime()
	dir := filepath.Join(root, filepath.FromSlash(ManifestDir))
	newer := false
	check := func(path string) error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.ModTime().After(built) {
			newer = true
		}
		return nil
	}
	for _, f := range []string{"Cargo.toml", "Cargo.lock"} {
		if err := check(filepath.Join(dir, f)); err != nil {
			return false, err
		}
	}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return check(path)
	})
	return newer, err
}

// build runs cargo build --release --locked on the crate.
func build(root, cargo string) error {
	manifest := filepath.Join(root, filepath.FromSlash(ManifestDir), "Cargo.toml")
	cmd := exec.Command(cargo, "build", "--release", "--locked", "--quiet", "--manifest-path", manifest)
	cmd.Dir = root
	began := time.Now()
	fmt.Fprintf(os.Stderr, "iggycodec: building %s (cargo build --release --locked)\n", manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cargo build --release --locked --manifest-path %s: %v\n%s", manifest, err, out)
	}
	fmt.Fprintf(os.Stderr, "iggycodec: built in %s\n", time.Since(began).Round(time.Second))
	return nil
}

func run(bin string) (*Oracle, error) {
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", bin, err)
	}
	o := &Oracle{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 1<<16), stderr: stderr}
	max, min, err := o.Version()
	if err != nil {
		_ = o.Close()
		return nil, fmt.Errorf("%s does not answer: %v", bin, err)
	}
	if max == 0 || min == 0 {
		_ = o.Close()
		return nil, fmt.Errorf("%s answers version %d %d", bin, max, min)
	}
	return o, nil
}

// Close ends the process. Later calls on o fail.
func (o *Oracle) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead == nil {
		o.dead = errors.New("iggycodec: oracle closed")
	}
	_ = o.stdin.Close()
	return o.cmd.Wait()
}

// call sends one command line and returns the fields of the "ok" answer
// after "ok", split into at most n fields (the last one keeps its spaces).
func (o *Oracle) call(n int, args ...string) ([]string, error) {
	line := strings.Join(args, " ")
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead != nil {
		return nil, o.dead
	}
	if _, err := io.WriteString(o.stdin, line+"\n"); err != nil {
		o.dead = fmt.Errorf("iggycodec: write %s: %v (stderr: %s)", args[0], err, o.stderr)
		return nil, o.dead
	}
	answer, err := o.stdout.ReadString('\n')
	if err != nil {
		o.dead = fmt.Errorf("iggycodec: read answer to %s: %v (stderr: %s)", args[0], err, o.stderr)
		return nil, o.dead
	}
	answer = strings.TrimSuffix(answer, "\n")
	if reason, ok := strings.CutPrefix(answer, "err "); ok {
		return nil, &Refused{Command: args[0], Reason: reason}
	}
	rest, ok := strings.CutPrefix(answer, "ok ")
	if !ok {
		return nil, fmt.Errorf("iggycodec: answer to %s is neither ok nor err: %.200q", args[0], answer)
	}
	fields := strings.SplitN(rest, " ", n)
	if len(fields) != n {
		return nil, fmt.Errorf("iggycodec: answer to %s has %d fields, want %d: %.200q", args[0], len(fields), n, answer)
	}
	return fields, nil
}

// encodeHex is the oracle's hex: lower case, "-" for no bytes.
func encodeHex(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func decodeHex(s string) ([]byte, error) {
	if s == "-" {
		return []byte{}, nil
	}
	return hex.DecodeString(s)
}

// decodeJSON decodes one object; numbers stay json.Number (u64 and u128
// values are decimal strings, f32 values numbers to parse with bit size 32).
func decodeJSON(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var values map[string]any
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("iggycodec: bad JSON %.200q: %v", s, err)
	}
	return values, nil
}

func u32(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	return uint32(v), err
}

// Version returns the crate's IGGY_PROTOCOL_VERSION and
// IGGY_PROTOCOL_VERSION_MIN, packed major<<20 | minor<<10 | patch.
func (o *Oracle) Version() (max, min uint32, err error) {
	f, err := o.call(2, "version")
	if err != nil {
		return 0, 0, err
	}
	if max, err = u32(f[0]); err != nil {
		return 0, 0, err
	}
	min, err = u32(f[1])
	return max, min, err
}

// Checked is a request frame the oracle accepted.
type Checked struct {
	Code  uint32 // the command code the server dispatches on
	Body  []byte // the body re-encoded by the crate from the decoded value
	Debug string // the decoded value, Rust Debug on one line
}

// Check checks a whole client->server frame (256-byte RequestHeader + body)
// as the server does and decodes its body with the crate's request type.
func (o *Oracle) Check(frame []byte) (Checked, error) {
	f, err := o.call(3, "request", encodeHex(frame))
	if err != nil {
		return Checked{}, err
	}
	code, err := u32(f[0])
	if err != nil {
		return Checked{}, err
	}
	body, err := decodeHex(f[1])
	if err != nil {
		return Checked{}, err
	}
	return Checked{Code: code, Body: body, Debug: f[2]}, nil
}

// Request is [Oracle.Check] without the debug text.
func (o *Oracle) Request(frame []byte) (code uint32, reencoded []byte, err error) {
	c, err := o.Check(frame)
	return c.Code, c.Body, err
}

func (o *Oracle) bodyAndValues(n int, args ...string) ([]byte, map[string]any, error) {
	f, err := o.call(n, args...)
	if err != nil {
		return nil, nil, err
	}
	body, err := decodeHex(f[0])
	if err != nil {
		return nil, nil, err
	}
	values, err := decodeJSON(f[1])
	return body, values, err
}

// Reply returns a randomized, valid reply body for code (deterministic in
// seed) as the server sends it, the committed-result section included for a
// result-framed operation, and its values.
func (o *Oracle) Reply(code uint32, seed uint64) (body []byte, values map[string]any, err error) {
	return o.bodyAndValues(2, "reply", strconv.FormatUint(uint64(code), 10), strconv.FormatUint(seed, 10))
}

// DecodeReply decodes a reply body for code with the crate, as the SDK
// does, and returns the crate's re-encoding and the values in Reply's form.
// A rejection section is refused with its result code.
func (o *Oracle) DecodeReply(code uint32, body []byte) (reencoded []byte, values map[string]any, err error) {
	return o.bodyAndValues(2, "decode-reply", strconv.FormatUint(uint64(code), 10), encodeHex(body))
}

// ReplyHeader returns the 256-byte ReplyHeader the server sends for code's
// operation (random identity fields, status 0, the committed-result byte by
// the crate's rule) and its fields. Its size counts Reply(code, seed)'s body.
func (o *Oracle) ReplyHeader(code uint32, seed uint64) ([]byte, map[string]any, error) {
	return o.bodyAndValues(2, "reply-header", strconv.FormatUint(uint64(code), 10), strconv.FormatUint(seed, 10))
}

// Eviction returns a 256-byte EvictionHeader for reason (client id 1). Only
// IncompatibleProtocol (14) carries the window max, min; other reasons need
// 0, 0.
func (o *Oracle) Eviction(reason uint8, max, min uint32) ([]byte, error) {
	f, err := o.call(1, "eviction", strconv.Itoa(int(reason)),
		strconv.FormatUint(uint64(max), 10), strconv.FormatUint(uint64(min), 10))
	if err != nil {
		return nil, err
	}
	return decodeHex(f[0])
}

// Reject returns the committed-result section of a rejected result-framed
// reply: count 1, index 0, result.
func (o *Oracle) Reject(result uint32) ([]byte, error) {
	f, err := o.call(1, "reject", strconv.FormatUint(uint64(result), 10))
	if err != nil {
		return nil, err
	}
	return decodeHex(f[0])
}

// Framing returns the operation a client sends code as, whether its reply
// carries the committed-result section, and the dispatch table's name.
func (o *Oracle) Framing(code uint32) (operation uint8, resultFramed bool, name string, err error) {
	f, err := o.call(3, "framing", strconv.FormatUint(uint64(code), 10))
	if err != nil {
		return 0, false, "", err
	}
	op, err := strconv.ParseUint(f[0], 10, 8)
	if err != nil {
		return 0, false, "", err
	}
	return uint8(op), f[1] == "1", f[2], nil
}
