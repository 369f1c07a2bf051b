package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

const configDoc = "../../docs/CONFIGURATION.md"

const configDocHead = `# Configuration

Every setting is a command-line flag, a ` + "`KIGGY_*`" + ` environment variable (the flag name in
upper case, dashes as underscores) and a line of the optional configuration file given by
` + "`--config`" + ` (` + "`name = value`" + `, the flag name without dashes; blank lines and ` + "`#`" + ` comments
ignored; a value may be double-quoted). Flags win over the environment, the environment over the
file. An unknown ` + "`KIGGY_*`" + ` variable or file key stops kiggy at start with an error naming it
(and the file's line), and so does a value out of its range (the message names the setting and the
allowed range). Sizes accept ` + "`KiB`" + `, ` + "`MiB`" + ` and ` + "`GiB`" + `
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

// TestConfigFile: the file is applied first, the environment and flags win
// over it, and its mistakes are reported with file and line.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/kiggy.conf"
	os.WriteFile(path, []byte("# kiggy\n\nlisten = 127.0.0.1:7000\ndefault-partitions=4\nadmin-addr = \"\"\nidle-timeout = 2m\nmax-frame-size = 8MiB\n"), 0o644)
	var o options
	s := newSettings("kiggy")
	registerOptions(s, &o)
	err := s.parse([]string{"--config", path, "--default-partitions=5"}, []string{"KIGGY_IDLE_TIMEOUT=3m"})
	if err != nil || o.listen != "127.0.0.1:7000" || o.defaultPartitions != 5 || o.adminAddr != "" || o.idleTimeout != 3*time.Minute || o.maxFrameSize != 8<<20 {
		t.Fatalf("parse: %v %+v", err, o)
	}
	s = newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse(nil, []string{"KIGGY_CONFIG=" + path}); err != nil || o.defaultPartitions != 4 {
		t.Fatalf("KIGGY_CONFIG: %v partitions=%d", err, o.defaultPartitions)
	}
	for body, want := range map[string]string{
		"listn = x\n":              "kiggy.conf:1: unknown setting \"listn\"",
		"\nlisten\n":               "kiggy.conf:2: want name = value",
		"default-partitions = 0\n": "kiggy.conf:1: default-partitions",
		"config = other\n":         "unknown setting \"config\"",
		"listen = \"x\n":           "bad quoted value",
	} {
		os.WriteFile(path, []byte(body), 0o644)
		s = newSettings("kiggy")
		registerOptions(s, &o)
		if err := s.parse([]string{"-config=" + path}, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
	s = newSettings("kiggy")
	registerOptions(s, &o)
	if err := s.parse([]string{"--config", dir + "/missing"}, nil); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if code := run([]string{"--log-level", "loud"}, nil); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if code := run(nil, []string{"KIGGY_NOPE=1"}); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if code := run([]string{"--iggy-protocol", "0.13"}, nil); code != 2 {
		t.Fatalf("--iggy-protocol 0.13: exit %d, want 2", code)
	}
}

// TestACLOptions: --super-users reads Kafka's super.users list, and a bad
// principal in it is refused.
func TestACLOptions(t *testing.T) {
	o := aclOptions{enabled: true, superUsers: "User:admin; User:bob;"}
	cfg, err := o.authorization()
	if err != nil || !cfg.Enabled || len(cfg.SuperUsers) != 2 || cfg.SuperUsers[1].String() != "User:bob" {
		t.Fatalf("authorization() = %+v, %v", cfg, err)
	}
	o.superUsers = "admin"
	if _, err := o.authorization(); err == nil {
		t.Fatal("a principal without a type was accepted")
	}
}
