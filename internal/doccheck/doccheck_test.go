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

func TestRefs(t *testing.T) {
	cases := []struct {
		text string
		want []Ref
	}{
		{"// see " + md("docs/design/kafka-protocol") + " §1.1.", []Ref{{Path: "docs/design/kafka-protocol.md", Sections: []string{"1.1"}, Line: 1}}},
		{"x\n// (" + md("docs/design/kafka-protocol") + "\n// §2.1, §2.4). more", []Ref{{Path: "docs/design/kafka-protocol.md", Sections: []string{"2.1", "2.4"}, Line: 2}}},
		{"(`" + md("RECORD_MAPPING") + "` §2.5, rule 1)", []Ref{{Path: "RECORD_MAPPING.md", Sections: []string{"2.5"}, Line: 1, Outside: true}}},
		{"[the mapping](" + md("design/record-mapping") + ") and " + md("MAPPING"), []Ref{{Path: "design/record-mapping.md", Line: 1}, {Path: "MAPPING.md", Line: 1}}},
		{md("style") + " habit 7; §3 elsewhere", []Ref{{Path: "style.md", Line: 1}}},
		{"see https://github.com/apache/iggy/blob/master/" + md("README") + " for more", nil},
		{"no documents here, only §1.2", nil},
	}
	for _, c := range cases {
		if got := Refs(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Refs(%q)\n got %+v\nwant %+v", c.text, got, c.want)
		}
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
// kind, from a Go file and from a Markdown file.
func TestCheck(t *testing.T) {
	fsys := fstest.MapFS{
		"docs/design/kafka-protocol.md": {Data: []byte("# K\n## 1. Framing\n### 1.1 The frame\n")},
		"docs/IGGY.md":                  {Data: []byte("See [mapping](" + md("design/kafka-protocol") + ") §1.1 and " + md("design/nosuch") + ".\n")},
		"wire/header.go": {Data: []byte("package wire\n\n// Good (" + md("docs/design/kafka-protocol") + " §1.1).\n" +
			"// Bad section (" + md("docs/design/kafka-protocol") + " §1.1, §7.3).\n" +
			"// Bad path (" + md("docs/nosuch") + " §1).\n" +
			"// Outside (" + md("KAFKA_PROTOCOL") + " §1.1).\n")},
	}
	known := map[string]bool{}
	var files []string
	for f := range fsys {
		known[f] = true
		if f != "docs/design/kafka-protocol.md" {
			files = append(files, f)
		}
	}
	problems, err := Check(fsys, files, known)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.File+":"+strconv.Itoa(p.Line))
	}
	want := map[string]bool{"docs/IGGY.md:1": true, "wire/header.go:4": true, "wire/header.go:5": true, "wire/header.go:6": true}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v", problems, want)
	}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("problems %v, want %v", problems, want)
		}
	}
	for _, p := range problems {
		if p.Line == 6 && !strings.Contains(p.Msg, "docs/design/") {
			t.Errorf("outside document not pointed at docs/design: %v", p)
		}
	}
}
