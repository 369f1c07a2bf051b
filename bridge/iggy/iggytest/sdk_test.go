package iggytest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// sdkDir is tests/iggysdk, relative to the repository root: a scripted
// session of Apache Iggy's official Rust SDK (crate iggy 0.11.1-edge.4,
// protocol 0.12.0). Its README says what each step does.
const sdkDir = "tests/iggysdk"

// sdkKnownGaps are the steps of tests/iggysdk that iggytest does not answer
// as the official SDK expects yet, each with a piece of the failure line it
// prints today. The script runs on past them (--gap); the test fails when
// one fails differently, and when one passes, so that the entry is removed
// once iggytest implements what it needs.
var sdkKnownGaps = map[string]string{
	// PollMessagesDeferred (106), sent through the SDK's raw path (it has
	// no typed call for it): iggytest answers status 3 InvalidCommand to
	// codes it does not serve. (WaitForMessages, 107, it serves: wait.go.)
	"poll-deferred": "PollMessagesDeferred: Invalid command",
}

// sdkExpectedSteps is every step the script prints; each must print a line.
var sdkExpectedSteps = []string{
	"connect", "login", "ping", "get-me", "cluster-metadata", "create-stream",
	"create-topic", "send", "poll-offset", "poll-past-end", "consumer-offset",
	"get-topic", "get-stream", "poll-next", "update-topic", "create-partitions", "consumer-group",
	"wait-for-messages", "poll-deferred", "reconnect",
	"after-reconnect", "delete-topic", "delete-stream", "logout",
}

// TestOfficialSDK012 runs tests/iggysdk, the official Rust SDK for
// protocol 0.12.0, against iggytest speaking 0.12 only, and checks every
// step it prints. The dropped connection of its "reconnect" step is a fault
// injected here: the first GetStreams is served, then its connection closes
// before the reply; the frames iggytest served show how the SDK came back
// (checkSDKRebind).
func TestOfficialSDK012(t *testing.T) {
	bin := sdkBinary(t)

	var (
		mu     sync.Mutex
		frames []sdkFrame
	)
	s := New(Config{
		Dialects: []proto.Dialect{proto.Dialect012},
		Tap: func(request, replies []byte) {
			f := tapFrame(request, replies)
			mu.Lock()
			frames = append(frames, f)
			mu.Unlock()
		},
	})
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.InjectFault(Fault{Op: proto.OpNonReplicated, Code: proto.CodeGetStreams, Drop: true, Apply: true, Close: true})

	args := []string{addr.String()}
	for step := range sdkKnownGaps {
		args = append(args, "--gap", step)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	t.Logf("%s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), out)
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.Bytes())
	}
	mu.Lock()
	t.Logf("frames iggytest served (%d):\n%s", len(frames), sdkFrameLog(frames))
	checkSDKRebind(t, frames)
	mu.Unlock()

	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		verdict, rest, _ := strings.Cut(sc.Text(), " ")
		step, detail, _ := strings.Cut(rest, " ")
		seen[step] = true
		want, gap := sdkKnownGaps[step]
		switch {
		case verdict == "ok" && gap:
			t.Errorf("known gap %q now passes (%s): remove it from sdkKnownGaps", step, detail)
		case verdict == "fail" && !gap:
			t.Errorf("step %s failed: %s", step, detail)
		case verdict == "fail" && !strings.Contains(detail, want):
			t.Errorf("known gap %q fails differently: %s (want a failure containing %q)", step, detail, want)
		case verdict == "skip" && !gap:
			t.Errorf("step %s skipped: %s", step, detail)
		case verdict != "ok" && verdict != "fail" && verdict != "skip":
			t.Errorf("unexpected line %q", sc.Text())
		}
	}
	if runErr != nil {
		t.Errorf("%s: %v", bin, runErr)
	}
	for _, step := range sdkExpectedSteps {
		if !seen[step] {
			t.Errorf("step %s did not run", step)
		}
	}
}

// checkSDKRebind checks how the SDK came back after the dropped GetStreams:
// over a new connection, BindSession (15) for the session it had, answered
// with status 0, then GetStreams again; never a second Register, which would
// have lost the session (0.12, design/iggy-protocol.md §9).
func checkSDKRebind(t *testing.T, frames []sdkFrame) {
	t.Helper()
	drop := slices.IndexFunc(frames, func(f sdkFrame) bool {
		return f.op == proto.OpNonReplicated && f.code == proto.CodeGetStreams && !f.replied
	})
	if drop < 0 {
		t.Error("no GetStreams was dropped: the reconnect step tested nothing")
		return
	}
	client := frames[drop].client
	var after []sdkFrame
	for _, f := range frames[drop+1:] {
		if f.client == client {
			after = append(after, f)
		}
	}
	switch {
	case len(after) < 2:
		t.Errorf("after the drop the SDK's client sent %d requests", len(after))
	case after[0].op != proto.OpNonReplicated || after[0].code != proto.CodeBindSession:
		t.Errorf("after the drop the SDK sent %v first, want BindSession (code 15)", after[0])
	case after[0].evicted || after[0].status != 0:
		t.Errorf("BindSession after the drop: %v", after[0])
	case after[1].op != proto.OpNonReplicated || after[1].code != proto.CodeGetStreams:
		t.Errorf("after BindSession the SDK sent %v, want GetStreams again", after[1])
	}
	if slices.ContainsFunc(after, func(f sdkFrame) bool { return f.op == proto.OpRegister }) {
		t.Error("the SDK logged in again after the drop instead of rebinding its session")
	}
}

// sdkFrame is one request iggytest served and what it answered.
type sdkFrame struct {
	client  proto.ClientID
	op      uint8
	code    uint32
	replied bool
	evicted bool
	reason  uint8
	status  uint32
}

func tapFrame(request, replies []byte) sdkFrame {
	var f sdkFrame
	if len(request) >= proto.HeaderSize {
		h := proto.ParseRequestHeader(request)
		f.op, f.code, f.client = h.Operation, h.Code, h.Client
	}
	if len(replies) >= proto.HeaderSize {
		r := proto.ParseReplyHeader(replies)
		f.replied = true
		f.evicted = r.Command == proto.CommandEviction
		f.reason, f.status = r.Reason, r.Status
	}
	return f
}

func (f sdkFrame) String() string {
	who := fmt.Sprintf("client …%04x", f.client.Lo&0xffff)
	what := fmt.Sprintf("op %d", f.op)
	if f.op == proto.OpNonReplicated {
		what = fmt.Sprintf("code %d", f.code)
	}
	switch {
	case !f.replied:
		return fmt.Sprintf("%s %s → no reply", who, what)
	case f.evicted:
		return fmt.Sprintf("%s %s → eviction reason %d", who, what, f.reason)
	}
	return fmt.Sprintf("%s %s → status %d", who, what, f.status)
}

func sdkFrameLog(frames []sdkFrame) string {
	var b strings.Builder
	for _, f := range frames {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// sdkBinary returns tests/iggysdk's binary, building it with cargo when it
// is missing or older than its sources. Without cargo and a binary it skips
// t, or fails it when CI or KIGGY_REQUIRE_TOOLS=1 is set.
func sdkBinary(t *testing.T) string {
	t.Helper()
	root, err := testtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, filepath.FromSlash(sdkDir))
	bin := filepath.Join(dir, "target", "release", "iggysdk")
	stale, err := sdkStale(dir, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !stale {
		return bin
	}
	cargo, lookErr := exec.LookPath("cargo")
	switch {
	case lookErr == nil:
	case fileExists(bin):
		t.Logf("cargo not found: using %s although it is older than its sources", bin)
		return bin
	default:
		why := fmt.Sprintf("cargo not found and %s not built (.ci/install-test-tools.sh installs both)", bin)
		if os.Getenv("CI") != "" || os.Getenv("KIGGY_REQUIRE_TOOLS") == "1" {
			t.Fatal(why)
		}
		t.Skipf("skipping: %s (CI or KIGGY_REQUIRE_TOOLS=1 fails instead)", why)
	}
	manifest := filepath.Join(dir, "Cargo.toml")
	cmd := exec.Command(cargo, "build", "--release", "--locked", "--quiet", "--manifest-path", manifest)
	cmd.Dir = root
	began := time.Now()
	t.Logf("building %s (cargo build --release --locked; minutes from a clean target/)", manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo build --release --locked --manifest-path %s: %v\n%s", manifest, err, out)
	}
	t.Logf("built in %s", time.Since(began).Round(time.Second))
	return bin
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// sdkStale reports whether bin is missing or older than Cargo.toml,
// Cargo.lock or a file under src/.
func sdkStale(dir, bin string) (bool, error) {
	info, err := os.Stat(bin)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	paths := []string{filepath.Join(dir, "Cargo.toml"), filepath.Join(dir, "Cargo.lock")}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(paths, func(p string) bool {
		fi, err := os.Stat(p)
		return err != nil || fi.ModTime().After(info.ModTime())
	}), nil
}
