// Package doccheck checks that the documents the repository cites are in the
// repository: every reference to a Markdown file (a path ending in .md,
// optionally followed by section numbers such as §2.5) in a Go or Markdown
// file must name a file that exists, resolved against the citing file's
// directory, the repository root or docs/, and every cited section must be a
// numbered heading of that file ("## 2. Produce", "### 2.5 Timestamps").
// A bare mention of one of the design documents that used to live outside
// the repository is such a reference too, and is reported with a pointer to
// docs/design (issue #15; docs/design/style.md §4).
//
// The package is a library for its own test, which walks every tracked file.
package doccheck

import (
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// refPattern matches a Markdown path, then optional section numbers. Between
// the path and the first § it allows closing quotes, backticks, brackets and
// a line break inside a Go comment ("kafka-protocol.md\n// §1.1"); further
// sections follow ", §n" or " and §n".
var refPattern = regexp.MustCompile("([A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md)\\b" +
	"((?:[`'\")\\]]*(?:\\s|//)*§[0-9]+(?:\\.[0-9]+)*)(?:\\s*(?:,|;|and)\\s*§[0-9]+(?:\\.[0-9]+)*)*)?")

// sectionPattern picks the section numbers out of a reference's tail.
var sectionPattern = regexp.MustCompile(`§([0-9]+(?:\.[0-9]+)*)`)

// outsidePattern matches the names of the design documents that lived
// outside the repository before issue #15; the names are split so that this
// file does not mention them.
var outsidePattern = regexp.MustCompile(`\b(?:KAFKA_PROTOCOL|RECORD_MAPPING|IGGY_PROTOCOL|STYLE|DESIGN)` + `\.md`)

// headingPattern matches a numbered Markdown heading and captures its number.
var headingPattern = regexp.MustCompile(`^#{1,6}\s+([0-9]+(?:\.[0-9]+)*)\.?(?:\s|$)`)

// Ref is one reference to a Markdown document found in a text.
type Ref struct {
	// Path is the document path as written.
	Path string
	// Sections are the cited section numbers, without "§", in order.
	Sections []string
	// Line is the 1-based line of the path.
	Line int
	// Outside reports that Path names one of the documents that used to
	// live outside the repository.
	Outside bool
}

// Refs returns the references to Markdown documents in text, in order. A
// path that is part of a URL (its word contains "://") is not a reference.
func Refs(text string) []Ref {
	var refs []Ref
	for _, m := range refPattern.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[2], m[3]
		if inURL(text, start, end) {
			continue
		}
		r := Ref{Path: text[start:end], Line: lineOf(text, start)}
		if m[4] >= 0 {
			for _, s := range sectionPattern.FindAllStringSubmatch(text[m[4]:m[5]], -1) {
				r.Sections = append(r.Sections, s[1])
			}
		}
		r.Outside = outsidePattern.MatchString(r.Path)
		refs = append(refs, r)
	}
	return refs
}

// inURL reports whether the word holding text[start:end] contains "://".
func inURL(text string, start, end int) bool {
	j := start
	for j > 0 && !strings.ContainsRune(" \t\n(<[\"'`", rune(text[j-1])) {
		j--
	}
	return strings.Contains(text[j:end], "://")
}

func lineOf(text string, i int) int { return strings.Count(text[:i], "\n") + 1 }

// Headings returns the section numbers of md's numbered headings. Headings
// inside fenced code blocks are ignored.
func Headings(md string) map[string]bool {
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// Problem is a reference that does not resolve.
type Problem struct {
	// File is the citing file, relative to the repository root.
	File string
	// Line is the 1-based line of the reference.
	Line int
	// Msg says what is wrong.
	Msg string
}

// String formats p as file:line: msg.
func (p Problem) String() string { return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Msg }

// Check reads each file of files from fsys (paths relative to its root,
// slash-separated) and returns the references that do not resolve. A cited
// document must be one of known (every file in the repository); a cited
// section must be a numbered heading of that document.
func Check(fsys fs.FS, files []string, known map[string]bool) ([]Problem, error) {
	var problems []Problem
	headings := map[string]map[string]bool{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		for _, r := range Refs(string(b)) {
			doc, ok := resolve(f, r.Path, known)
			if !ok {
				msg := "cites " + r.Path + ", which is not in the repository"
				if r.Outside {
					msg += " (the design documents are in docs/design/)"
				}
				problems = append(problems, Problem{f, r.Line, msg})
				continue
			}
			if len(r.Sections) == 0 {
				continue
			}
			h, ok := headings[doc]
			if !ok {
				db, err := fs.ReadFile(fsys, doc)
				if err != nil {
					return nil, err
				}
				h = Headings(string(db))
				headings[doc] = h
			}
			for _, s := range r.Sections {
				if !h[s] {
					problems = append(problems, Problem{f, r.Line, "cites " + r.Path + " §" + s + ", but " + doc + " has no heading numbered " + s})
				}
			}
		}
	}
	return problems, nil
}

// resolve finds the document ref names, cited from file: relative to the
// file's directory, to the repository root, or to docs/.
func resolve(file, ref string, known map[string]bool) (string, bool) {
	for _, base := range []string{path.Dir(file), ".", "docs"} {
		p := path.Clean(path.Join(base, ref))
		if known[p] {
			return p, true
		}
	}
	return "", false
}
