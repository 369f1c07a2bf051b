package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// knob is one setting: a flag, its KIGGY_* variable, its group in --help.
type knob struct {
	name  string // flag name; env is KIGGY_ + upper(name) with - → _
	group string
	usage string
	value flag.Value
}

func envName(flagName string) string {
	return "KIGGY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// settings is the knob registry of one parse.
type settings struct {
	fs    *flag.FlagSet
	knobs []knob
	set   map[string]bool // knobs given by the file, a variable or a flag
}

// isSet reports whether the last parse was given the knob name (by the
// file, a variable or a flag), as opposed to leaving its default.
func (s *settings) isSet(name string) bool { return s.set[name] }

func newSettings(name string) *settings {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &settings{fs: fs}
}

func (s *settings) add(group, name, usage string, v flag.Value) {
	s.fs.Var(v, name, usage)
	s.knobs = append(s.knobs, knob{name: name, group: group, usage: usage, value: v})
}

func (s *settings) String(group, name string, p *string, def, usage string) {
	*p = def
	s.add(group, name, usage, (*stringValue)(p))
}

func (s *settings) Int(group, name string, p *int64, def, min, max int64, usage string) {
	*p = def
	s.add(group, name, usage, &intValue{p: p, min: min, max: max})
}

func (s *settings) Float(group, name string, p *float64, def, min, max float64, usage string) {
	*p = def
	s.add(group, name, usage, &floatValue{p: p, min: min, max: max})
}

func (s *settings) Bool(group, name string, p *bool, def bool, usage string) {
	*p = def
	s.add(group, name, usage, (*boolValue)(p))
}

func (s *settings) Duration(group, name string, p *time.Duration, def, min, max time.Duration, usage string) {
	*p = def
	s.add(group, name, usage, &durationValue{p: p, min: min, max: max})
}

// configKnob is the flag naming a configuration file.
const configKnob = "config"

// parse applies, lowest precedence first, the configuration file (--config
// or KIGGY_CONFIG), the KIGGY_* variables from env, then the command-line
// args. An unknown KIGGY_* variable or file key is an error: a typo must not
// be silently ignored.
func (s *settings) parse(args, env []string) error {
	s.set = map[string]bool{}
	known := map[string]*knob{}
	byName := map[string]*knob{}
	for i := range s.knobs {
		known[envName(s.knobs[i].name)] = &s.knobs[i]
		byName[s.knobs[i].name] = &s.knobs[i]
	}
	if path := configPath(args, env); path != "" {
		if err := s.parseFile(path, byName); err != nil {
			return err
		}
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "KIGGY_") {
			continue
		}
		kn, ok := known[k]
		if !ok {
			return fmt.Errorf("unknown environment variable %s (see kiggy --help for the KIGGY_* variables)", k)
		}
		if err := kn.value.Set(v); err != nil {
			return fmt.Errorf("%s=%q: %v", k, v, err)
		}
		s.set[kn.name] = true
	}
	if err := s.fs.Parse(args); err != nil {
		return err
	}
	s.fs.Visit(func(f *flag.Flag) { s.set[f.Name] = true })
	if s.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", s.fs.Arg(0))
	}
	return nil
}

// configPath finds the configuration file before the flags are parsed: the
// last --config on the command line, else KIGGY_CONFIG.
func configPath(args, env []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, envName(configKnob)+"="); ok {
			path = v
		}
	}
	fromArgs := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != configKnob {
			continue
		}
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		fromArgs = val
	}
	if fromArgs != "" {
		return fromArgs
	}
	return path
}

// parseFile applies a configuration file: one "name = value" per line, name
// a flag name without dashes, blank lines and lines starting with # ignored;
// a value may be double-quoted (Go syntax) to keep spaces or an empty string.
func (s *settings) parseFile(path string, byName map[string]*knob) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, i+1)
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s: want name = value, got %q", where, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		kn, known := byName[k]
		if !known || k == configKnob {
			return fmt.Errorf("%s: unknown setting %q (the names are the flags of kiggy --help, without dashes)", where, k)
		}
		if strings.HasPrefix(v, `"`) {
			uq, err := strconv.Unquote(v)
			if err != nil {
				return fmt.Errorf("%s: %s: bad quoted value %s", where, k, v)
			}
			v = uq
		}
		if err := kn.value.Set(v); err != nil {
			return fmt.Errorf("%s: %s = %q: %v", where, k, v, err)
		}
		s.set[k] = true
	}
	return nil
}

// usage writes --help: knobs grouped, each with its variable and default.
func (s *settings) usage(w io.Writer, groups []string) {
	fmt.Fprintf(w, "kiggy: a Kafka-wire-protocol gateway for Apache Iggy.\n\nUsage: kiggy [flags]\n\nEvery flag can also be set with its KIGGY_* environment variable or in the\n--config file (name = value lines); flags win over variables, variables over the file.\n")
	byGroup := map[string][]knob{}
	for _, k := range s.knobs {
		byGroup[k.group] = append(byGroup[k.group], k)
	}
	for _, g := range groups {
		ks := byGroup[g]
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, k := range ks {
			fmt.Fprintf(w, "  --%s (%s)\n", k.name, envName(k.name))
			fmt.Fprintf(w, "      %s (default %q)\n", k.usage, k.value.String())
		}
	}
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

type intValue struct {
	p        *int64
	min, max int64
}

func (v *intValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n < v.min || n > v.max {
		return fmt.Errorf("%d is out of range [%d, %d]", n, v.min, v.max)
	}
	*v.p = n
	return nil
}
func (v *intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

type floatValue struct {
	p        *float64
	min, max float64
}

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	if !(f >= v.min && f <= v.max) { // NaN is out of range too
		return fmt.Errorf("%s is out of range [%g, %g]", s, v.min, v.max)
	}
	*v.p = f
	return nil
}
func (v *floatValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

// parseSize accepts plain integers and binary suffixes (KiB, MiB, GiB).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(s, suf.s) {
			s, mult = strings.TrimSuffix(s, suf.s), suf.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer (optionally with KiB, MiB or GiB)")
	}
	return n * mult, nil
}

type durationValue struct {
	p        *time.Duration
	min, max time.Duration
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s or 10m")
	}
	if d < v.min || d > v.max {
		return fmt.Errorf("%v is out of range [%v, %v]", d, v.min, v.max)
	}
	*v.p = d
	return nil
}
func (v *durationValue) String() string {
	if v.p == nil {
		return "0s"
	}
	return v.p.String()
}

// markdown renders the knob table of docs/CONFIGURATION.md.
func (s *settings) markdown(w io.Writer, groups []string) {
	byGroup := map[string][]knob{}
	for _, k := range s.knobs {
		byGroup[k.group] = append(byGroup[k.group], k)
	}
	for _, g := range groups {
		fmt.Fprintf(w, "\n## %s\n\n| flag | environment | default | meaning |\n|---|---|---|---|\n", g)
		for _, k := range byGroup[g] {
			def := k.value.String()
			if def == "" {
				def = "(empty)"
			}
			fmt.Fprintf(w, "| `--%s` | `%s` | `%s` | %s |\n", k.name, envName(k.name), def, k.usage)
		}
	}
}
