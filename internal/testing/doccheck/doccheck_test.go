package doccheck

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// TestRepositoryCitations walks every tracked .go and .md file and fails,
// naming file:line, on each cited document or section that is not in the
// repository.
func TestRepositoryCitations(t *testing.T) {
	root, all := repoFiles(t)
	known := map[string]bool{}
	var files []string
	for _, f := range all {
		known[f] = true
		if strings.HasSuffix(f, ".go") || strings.HasSuffix(f, ".md") {
			files = append(files, f)
		}
	}
	if !known["docs/design/README.md"] || len(files) < 100 {
		t.Fatalf("found %d files under %s, docs/design/README.md %v: not the kiggy repository?", len(files), root, known["docs/design/README.md"])
	}
	problems, err := Check(os.DirFS(root), files, known)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// repoFiles returns the repository root and its tracked files (slash
// paths), from git ls-files, or from a walk that skips .git when git is not
// available.
func repoFiles(t *testing.T) (string, []string) {
	t.Helper()
	if out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		root := strings.TrimSpace(string(out))
		cmd := exec.Command("git", "ls-files", "-z")
		cmd.Dir = root
		if out, err := cmd.Output(); err == nil {
			var files []string
			for _, f := range bytes.Split(out, []byte{0}) {
				if len(f) > 0 {
					files = append(files, string(f))
				}
			}
			return root, files
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return root, files
}

// md builds a document name without writing it whole in this file, so that
// the repository walk does not report the deliberately bad references below.
func md(name string) string { return name + ".md" }

// sec writes a section mark without putting one in this file's text, so
// that the repository walk does not check the examples below.
func sec(n string) string { return "\u00a7" + n }

func TestRefs(t *testing.T) {
	kp, rm, st := md("docs/design/kafka-protocol"), md("RECORD_MAPPING"), md("style")
	cases := []struct {
		text string
		want []Ref
	}{
		{"// see " + kp + " " + sec("1.1") + ".", []Ref{{Path: kp, Sections: []string{"1.1"}, Line: 1}}},
		{"x\n// (" + kp + "\n// " + sec("2.1") + ", " + sec("2.4") + "). more", []Ref{{Path: kp, Sections: []string{"2.1", "2.4"}, Line: 2}}},
		{"(`" + rm + "` " + sec("2.5") + ", rule 1)", []Ref{{Path: rm, Sections: []string{"2.5"}, Line: 1, Outside: true}}},
		{"[the mapping](" + md("design/record-mapping") + ") and " + md("MAPPING"), []Ref{{Path: md("design/record-mapping"), Line: 1}, {Path: md("MAPPING"), Line: 1}}},
		{st + " habit 7; " + sec("3") + " elsewhere", []Ref{{Path: st, Line: 1}}},
		{"see https://github.com/apache/iggy/blob/master/" + md("README") + " for more", nil},
		{"no documents here, only " + sec("1.2"), nil},
	}
	for _, c := range cases {
		if got := Refs(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Refs(%q)\n got %+v\nwant %+v", c.text, got, c.want)
		}
	}
}

func TestBareSections(t *testing.T) {
	text := "(" + md("docs/design/kafka-protocol") + " " + sec("1.1") + ", " + sec("1.5") + ")\n// then " + sec("3.8") + " alone"
	want := []Ref{{Sections: []string{"3.8"}, Line: 2}}
	if got := BareSections(text); !reflect.DeepEqual(got, want) {
		t.Fatalf("BareSections = %+v, want %+v", got, want)
	}
}

func TestHeadings(t *testing.T) {
	h := Headings("# Title\n## 1. Framing\n### 1.1 The frame\n```\n## 9. in a fence\n```\n#### 8.0 Smallest\n## Notes\n")
	want := map[string]bool{"1": true, "1.1": true, "8.0": true}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("Headings = %v, want %v", h, want)
	}
}

// TestCheck shows the check can fail: a good and a bad reference of each
// kind, from Go files and from a Markdown file.
func TestCheck(t *testing.T) {
	kp := md("docs/design/kafka-protocol")
	fsys := fstest.MapFS{
		"docs/design/kafka-protocol.md": {Data: []byte("# K\n## 1. Framing\n### 1.1 The frame\nSee " + sec("1") + " and " + sec("4") + ".\n**Safety.** Bold.\nLimits: a paragraph.\n")},
		"docs/IGGY.md":                  {Data: []byte("See [it](" + md("design/kafka-protocol") + ") " + sec("1.1") + " and " + md("design/nosuch") + ".\n")},
		"wire/header.go": {Data: []byte("package wire\n\n// Good (" + kp + " " + sec("1.1") + ").\n" +
			"// Bad section (" + kp + " " + sec("1.1") + ", " + sec("7.3") + ").\n" +
			"// Bad path (" + md("docs/nosuch") + " " + sec("1") + ").\n" +
			"// Outside (" + md("KAFKA_PROTOCOL") + " " + sec("1.1") + ").\n" +
			"// Bare, no declaration (" + sec("1.1") + ").\n" +
			"// Named (" + kp + ", \"The frame\", \"Safety\", \"Limits\").\n" +
			"// Named, missing (" + kp + ", \"Framing\", \"No such part\").\n" +
			"// A name across a comment break (" + kp + ", \"The\n// frame\").\n" +
			"var _ = []string{\"" + kp + "\", \"not a citation\"}\n")},
		"bridge/iggy/doc.go": {Data: []byte("// Package iggy. Bare section numbers (" + sec("1") + ") refer to\n// " + kp + ".\npackage iggy\n")},
		"bridge/iggy/x.go":   {Data: []byte("package iggy\n\n// good " + sec("1.1") + "\n// bad " + sec("2.2") + "\n")},
	}
	known := map[string]bool{}
	var files []string
	for f := range fsys {
		known[f] = true
		files = append(files, f)
	}
	problems, err := Check(fsys, files, known)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, p := range problems {
		got[p.File+":"+strconv.Itoa(p.Line)] = true
	}
	want := map[string]bool{
		"docs/design/kafka-protocol.md:4": true, // bare mark 4 of its own page
		"docs/IGGY.md:1":                  true, // missing document
		"wire/header.go:4":                true, // missing section
		"wire/header.go:5":                true, // missing document
		"wire/header.go:6":                true, // outside document
		"wire/header.go:7":                true, // bare mark without a declaration
		"wire/header.go:9":                true, // missing named section
		"bridge/iggy/x.go:4":              true, // bare mark missing in the declared page
	}
	if !reflect.DeepEqual(got, want) || len(problems) != len(want) {
		t.Fatalf("problems:\n%v\nwant at %v", problems, want)
	}
	for _, p := range problems {
		if p.File == "wire/header.go" && p.Line == 6 && !strings.Contains(p.Msg, "docs/design/") {
			t.Errorf("outside document not pointed at docs/design: %v", p)
		}
	}
}

func TestNamedRefs(t *testing.T) {
	ig := md("docs/IGGY")
	text := "(" + ig + ", \"Walk\n// marks\", \"Reads\")\n" + ig + " \"Durability\" and \"" + ig + "\", \"x\""
	want := []Named{{Path: ig, Name: "Walk marks", Line: 1}, {Path: ig, Name: "Reads", Line: 1}, {Path: ig, Name: "Durability", Line: 3}}
	if got := NamedRefs(text); !reflect.DeepEqual(got, want) {
		t.Fatalf("NamedRefs = %+v, want %+v", got, want)
	}
}

func TestTitles(t *testing.T) {
	got := Titles("# Title\n## 2. Produce\n### 2.5 Timestamps ##\n```\n## in a fence\n```\n- **Walk marks.** Frames\nOutages: when\nnot: lower case\n")
	want := []string{"Title", "Produce", "Timestamps", "Walk marks", "Outages"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Titles = %q, want %q", got, want)
	}
}
