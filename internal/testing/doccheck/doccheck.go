// Package doccheck checks that the documents the repository cites are in the
// repository (docs/design/style.md §4).
//
// A reference is a path ending in .md, optionally followed by section marks
// (a § and a number, several separated by commas). The path must name a
// tracked file, resolved against the citing file's directory, the repository
// root or docs/, and each section number must be the number of a heading of
// that file ("## 2. Produce", "### 2.5 Timestamps"). A bare mention of one
// of the design documents that used to live outside the repository is such a
// reference too, and is reported with a pointer to docs/design.
//
// A section mark with no path in front of it is checked too: in a Markdown
// file it names a heading of that file; in a Go file it names a heading of
// the document its package declares in a comment of the form "bare section
// numbers ... refer to docs/design/<page>.md", and without such a declaration
// it is reported.
//
// A section named in quotes right after a path (docs/IGGY.md, "Walk marks")
// must be a title of that document: a heading's text (its number left out;
// the name may be the start of a longer heading), a bold label ("**Walk
// marks.**"), or the word or words that open a paragraph before a colon.
// Several names may follow, each after a comma.
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

// refPattern matches a Markdown path, then optional section marks. Between
// the path and the first mark it allows closing quotes, backticks, brackets
// and a line break inside a Go comment (the path ending one comment line, the
// mark starting the next); further marks follow a comma, a semicolon or
// "and".
var refPattern = regexp.MustCompile("([A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md)\\b" +
	"((?:[`'\")\\]]*(?:\\s|//)*§[0-9]+(?:\\.[0-9]+)*)(?:\\s*(?:,|;|and)(?:\\s|//)*§[0-9]+(?:\\.[0-9]+)*)*)?")

// sectionPattern matches one section mark and captures its number.
var sectionPattern = regexp.MustCompile(`§([0-9]+(?:\.[0-9]+)*)`)

// outsidePattern matches the names of the design documents that lived
// outside the repository; the names are split so that this
// file does not mention them.
var outsidePattern = regexp.MustCompile(`\b(?:KAFKA_PROTOCOL|RECORD_MAPPING|IGGY_PROTOCOL|STYLE|DESIGN)` + `\.md`)

// headingPattern matches a numbered Markdown heading and captures its number.
var headingPattern = regexp.MustCompile(`^#{1,6}\s+([0-9]+(?:\.[0-9]+)*)\.?(?:\s|$)`)

// declPattern matches a package's declaration of the document its bare
// section marks refer to.
var declPattern = regexp.MustCompile(`(?i)bare section numbers?\b[\s\S]{0,80}?\brefers? to\s+(?://\s*)?([A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)`)

// namedPattern matches a Markdown path followed by a quoted section name and
// further quoted names after commas. A quote right after the path ends a
// string literal, not a citation, so at least one space (or a Go comment's
// line break) must come first.
var namedPattern = regexp.MustCompile("([A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md)\\b[`)\\]]*,?(?:\\s|//)+" +
	"[\"\u201c]([^\"\u201d]{1,300})[\"\u201d]((?:,(?:\\s|//)+[\"\u201c][^\"\u201d]{1,300}[\"\u201d])*)")

// quotedPattern matches one quoted name in namedPattern's tail.
var quotedPattern = regexp.MustCompile("[\"\u201c]([^\"\u201d]{1,300})[\"\u201d]")

// commentBreak is a line break inside a Go comment or a Markdown paragraph,
// read as one space inside a quoted name.
var commentBreak = regexp.MustCompile(`\s*\n\s*(?://\s*)?`)

// headingTitle, boldTitle and colonTitle find the titles of a document that
// a quoted name may cite: a heading, a bold label, a paragraph's opening
// words before a colon.
var (
	headingTitle = regexp.MustCompile(`^#{1,6}\s+(?:[0-9]+(?:\.[0-9]+)*\.?\s+)?(.*?)\s*#*\s*$`)
	boldTitle    = regexp.MustCompile(`\*\*([^*]+?)[.:]?\*\*`)
	colonTitle   = regexp.MustCompile(`^(?:[-*]\s+)?([A-Z][^:.]{0,80}):`)
)

// Named is a section of a Markdown document cited by name.
type Named struct {
	// Path is the document path as written.
	Path string
	// Name is the quoted name, line breaks read as spaces.
	Name string
	// Line is the 1-based line of the path.
	Line int
}

// NamedRefs returns the sections cited by name in text, in order.
func NamedRefs(text string) []Named {
	var out []Named
	pathMatches(namedPattern, text, func(m []int, p string, line int) {
		out = append(out, Named{Path: p, Name: commentBreak.ReplaceAllString(text[m[4]:m[5]], " "), Line: line})
		for _, q := range quotedPattern.FindAllStringSubmatch(text[m[6]:m[7]], -1) {
			out = append(out, Named{Path: p, Name: commentBreak.ReplaceAllString(q[1], " "), Line: line})
		}
	})
	return out
}

// pathMatches calls fn for each match of re in text (group 1 the path)
// whose path is not part of a URL, with the match's indexes, the path and
// its line.
func pathMatches(re *regexp.Regexp, text string, fn func(m []int, path string, line int)) {
	for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[2], m[3]
		if !inURL(text, start, end) {
			fn(m, text[start:end], lineOf(text, start))
		}
	}
}

// Titles returns what md's sections may be cited by: heading texts, bold
// labels and paragraph-opening labels. Lines inside fenced code blocks are
// ignored.
func Titles(md string) []string {
	var out []string
	for _, line := range proseLines(md) {
		if m := headingTitle.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
			continue
		}
		for _, b := range boldTitle.FindAllStringSubmatch(line, -1) {
			out = append(out, b[1])
		}
		if m := colonTitle.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// hasTitle reports whether name is one of titles or the start of one.
func hasTitle(titles []string, name string) bool {
	for _, t := range titles {
		if strings.HasPrefix(t, name) {
			return true
		}
	}
	return false
}

// Ref is one reference to a Markdown document found in a text.
type Ref struct {
	// Path is the document path as written.
	Path string
	// Sections are the cited section numbers, without the mark, in order.
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
	pathMatches(refPattern, text, func(m []int, p string, line int) {
		r := Ref{Path: p, Line: line, Outside: outsidePattern.MatchString(p)}
		if m[4] >= 0 {
			for _, s := range sectionPattern.FindAllStringSubmatch(text[m[4]:m[5]], -1) {
				r.Sections = append(r.Sections, s[1])
			}
		}
		refs = append(refs, r)
	})
	return refs
}

// BareSections returns the section marks of text that follow no document
// path, each as a Ref with an empty Path and one section.
func BareSections(text string) []Ref {
	var tails [][2]int
	for _, m := range refPattern.FindAllStringSubmatchIndex(text, -1) {
		if m[4] >= 0 {
			tails = append(tails, [2]int{m[4], m[5]})
		}
	}
	var bare []Ref
	for _, m := range sectionPattern.FindAllStringSubmatchIndex(text, -1) {
		inTail := false
		for _, t := range tails {
			if t[0] <= m[0] && m[1] <= t[1] {
				inTail = true
				break
			}
		}
		if !inTail {
			bare = append(bare, Ref{Sections: []string{text[m[2]:m[3]]}, Line: lineOf(text, m[0])})
		}
	}
	return bare
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

// proseLines returns md's lines outside fenced code blocks.
func proseLines(md string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// Headings returns the section numbers of md's numbered headings. Headings
// inside fenced code blocks are ignored.
func Headings(md string) map[string]bool {
	out := map[string]bool{}
	for _, line := range proseLines(md) {
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
	c := checker{fsys: fsys, known: known, headings: map[string]map[string]bool{}, titles: map[string][]string{}}
	texts := make(map[string]string, len(files))
	decl := map[string]string{} // Go package directory → declared document
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		texts[f] = string(b)
		if strings.HasSuffix(f, ".go") {
			if m := declPattern.FindStringSubmatch(texts[f]); m != nil {
				if doc, ok := resolve(f, m[1], known); ok {
					decl[path.Dir(f)] = doc
				}
			}
		}
	}
	for _, f := range files {
		text := texts[f]
		for _, r := range Refs(text) {
			doc, ok := resolve(f, r.Path, known)
			if !ok {
				msg := "cites " + r.Path + ", which is not in the repository"
				if r.Outside {
					msg += " (the design documents are in docs/design/)"
				}
				c.problems = append(c.problems, Problem{f, r.Line, msg})
				continue
			}
			if err := c.sections(f, r, r.Path, doc); err != nil {
				return nil, err
			}
		}
		for _, r := range NamedRefs(text) {
			doc, ok := resolve(f, r.Path, known)
			if !ok {
				continue // reported as a missing document above
			}
			if err := c.named(f, r, doc); err != nil {
				return nil, err
			}
		}
		for _, r := range BareSections(text) {
			doc := f
			if strings.HasSuffix(f, ".go") {
				doc = decl[path.Dir(f)]
			}
			if doc == "" {
				c.problems = append(c.problems, Problem{f, r.Line, "cites \u00a7" + r.Sections[0] + " without naming a document, and the package declares none"})
				continue
			}
			if err := c.sections(f, r, "\u00a7"+r.Sections[0]+" (bare, of "+doc+")", doc); err != nil {
				return nil, err
			}
		}
	}
	return c.problems, nil
}

type checker struct {
	fsys     fs.FS
	known    map[string]bool
	headings map[string]map[string]bool
	titles   map[string][]string
	problems []Problem
}

// named checks a section cited by name against doc's titles.
func (c *checker) named(file string, r Named, doc string) error {
	t, ok := c.titles[doc]
	if !ok {
		b, err := fs.ReadFile(c.fsys, doc)
		if err != nil {
			return err
		}
		t = Titles(string(b))
		c.titles[doc] = t
	}
	if !hasTitle(t, r.Name) {
		c.problems = append(c.problems, Problem{file, r.Line, "cites " + r.Path + ", \"" + r.Name + "\", but " + doc + " has no heading or label of that name"})
	}
	return nil
}

// sections checks r's section numbers against doc's headings.
func (c *checker) sections(file string, r Ref, cited, doc string) error {
	if len(r.Sections) == 0 {
		return nil
	}
	h, ok := c.headings[doc]
	if !ok {
		b, err := fs.ReadFile(c.fsys, doc)
		if err != nil {
			return err
		}
		h = Headings(string(b))
		c.headings[doc] = h
	}
	for _, s := range r.Sections {
		if !h[s] {
			c.problems = append(c.problems, Problem{file, r.Line, "cites " + cited + " section " + s + ", but " + doc + " has no heading numbered " + s})
		}
	}
	return nil
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
