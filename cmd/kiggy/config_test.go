package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const configDoc = "../../docs/CONFIGURATION.md"

const configDocHead = `# Configuration

Every setting is a command-line flag and a ` + "`KIGGY_*`" + ` environment variable (the flag name in
upper case, dashes as underscores). Flags win over the environment. An unknown ` + "`KIGGY_*`" + `
variable stops kiggy at start with an error naming it, and so does a value out of its range (the
message names the setting and the allowed range). Sizes accept ` + "`KiB`" + `, ` + "`MiB`" + ` and ` + "`GiB`" + `
suffixes; durations are Go durations (` + "`30s`" + `, ` + "`10m`" + `). ` + "`kiggy --help`" + ` prints the same list.

This file is generated from the flag definitions: ` + "`KIGGY_UPDATE_DOCS=1 go test ./cmd/kiggy/`" + `.
`

// TestConfigurationDoc keeps docs/CONFIGURATION.md equal to the flags.
func TestConfigurationDoc(t *testing.T) {
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	var b bytes.Buffer
	b.WriteString(configDocHead)
	s.markdown(&b, groups)
	if os.Getenv("KIGGY_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(configDoc, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(configDoc)
	if err != nil || !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/CONFIGURATION.md is out of date (err %v): run KIGGY_UPDATE_DOCS=1 go test ./cmd/kiggy/", err)
	}
}

func TestEnvAndFlags(t *testing.T) {
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	err := s.parse([]string{"--default-partitions", "3"}, []string{"KIGGY_LISTEN=127.0.0.1:1", "KIGGY_DEFAULT_PARTITIONS=7", "PATH=/bin"})
	if err != nil || o.listen != "127.0.0.1:1" || o.defaultPartitions != 3 {
		t.Fatalf("parse: %v listen=%s partitions=%d", err, o.listen, o.defaultPartitions)
	}
	s = newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse(nil, []string{"KIGGY_LISTN=x"}); err == nil || !strings.Contains(err.Error(), "KIGGY_LISTN") {
		t.Fatalf("unknown variable accepted: %v", err)
	}
	s = newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse([]string{"--default-partitions", "0"}, nil); err == nil || !strings.Contains(err.Error(), "default-partitions") || !strings.Contains(err.Error(), "[1, 1000]") {
		t.Fatalf("out-of-range value: %v", err)
	}
	s = newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse([]string{"--max-frame-size", "8MiB"}, nil); err != nil || o.maxFrameSize != 8<<20 {
		t.Fatalf("size suffix: %v %d", err, o.maxFrameSize)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if code := run([]string{"--log-level", "loud"}, nil); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if code := run(nil, []string{"KIGGY_NOPE=1"}); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}
