package tlsconf

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Principal mapping rules: Kafka's ssl.principal.mapping.rules
// (docs/design/security.md §5). A list of rules separated by commas, tried
// in order; the first that applies gives the principal name:
//
//	DEFAULT                      the distinguished name unchanged
//	RULE:pattern/replacement/    when pattern matches the whole DN, the DN
//	                             with every match of pattern replaced
//	RULE:pattern/replacement/L   the same, lower-cased
//	RULE:pattern/replacement/U   the same, upper-cased
//
// A '/' inside pattern or replacement is written "\/". When no rule applies
// the client is refused. Patterns are Go regular expressions (RE2): the
// Java syntax Kafka accepts mostly carries over, but look-arounds and
// back-references inside a pattern are refused at start-up. Replacements use
// Java's syntax: $n is capture group n (the longest number that names a
// group; a number past the last group is literal text), \x is a literal x.

// DefaultRules is Kafka's default ssl.principal.mapping.rules.
const DefaultRules = "DEFAULT"

// ErrNoMatchingRule is returned by Mapper.Name when no rule applies to a DN
// (Kafka's SslPrincipalMapper.NoMatchingRule).
var ErrNoMatchingRule = errors.New("tlsconf: no principal mapping rule applies to the certificate subject")

// Mapper maps a certificate subject DN to a principal name.
type Mapper struct {
	rules []rule
	text  string
}

type rule struct {
	isDefault  bool
	full       *regexp.Regexp // the pattern anchored at both ends: does it match the whole DN
	re         *regexp.Regexp // the pattern itself, for the replacement
	repl       string         // the replacement in Go's Expand syntax
	lower, upp bool
}

// ParseRules parses ssl.principal.mapping.rules; "" means DefaultRules.
func ParseRules(s string) (*Mapper, error) {
	m := &Mapper{text: s}
	if strings.TrimSpace(s) == "" {
		s = DefaultRules
	}
	rest := strings.TrimSpace(s)
	for rest != "" {
		var r rule
		var err error
		var ok bool
		r, rest, ok, err = parseRule(rest)
		if err != nil {
			return nil, err
		}
		if ok {
			m.rules = append(m.rules, r)
		}
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("tlsconf: principal mapping rules: want ',' between rules, at %q", rest)
		}
		rest = strings.TrimLeft(rest[1:], " \t\r\n")
	}
	return m, nil
}

// parseRule reads one rule from the start of s and returns what follows
// it; ok false is an empty rule (ignored, as Kafka does).
func parseRule(s string) (r rule, rest string, ok bool, err error) {
	switch {
	case strings.HasPrefix(s, ","):
		return rule{}, s, false, nil
	case strings.HasPrefix(s, "DEFAULT"):
		rest = s[len("DEFAULT"):]
		if t := strings.TrimLeft(rest, " \t\r\n"); t != "" && t[0] != ',' {
			return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule %q: unexpected text after DEFAULT", s)
		}
		return rule{isDefault: true}, rest, true, nil
	case strings.HasPrefix(s, "RULE:"):
	default:
		end := strings.IndexByte(s, ',')
		if end < 0 {
			end = len(s)
		}
		return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule %q: want DEFAULT or RULE:pattern/replacement/[LU]", s[:end])
	}
	body := s[len("RULE:"):]
	pattern, body, ok1 := cutUnescaped(body)
	repl, body, ok2 := cutUnescaped(body)
	if !ok1 || !ok2 {
		return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule %q: want RULE:pattern/replacement/[LU]", s)
	}
	if strings.HasPrefix(body, "L") {
		r.lower, body = true, body[1:]
	} else if strings.HasPrefix(body, "U") {
		r.upp, body = true, body[1:]
	}
	// Kafka ignores anything up to the next separator; so do we, except that
	// text there is almost always a typo, so it is refused.
	if t := strings.TrimLeft(body, " \t\r\n"); t != "" && t[0] != ',' {
		return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule %q: unexpected text %q after the flags (want L, U or nothing)", s, t)
	}
	if r.re, err = regexp.Compile(pattern); err != nil {
		return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule pattern %q: %v", pattern, err)
	}
	r.full = regexp.MustCompile(`^(?:` + pattern + `)$`)
	if r.repl, err = javaReplacement(repl, r.re.NumSubexp()); err != nil {
		return rule{}, "", false, fmt.Errorf("tlsconf: principal mapping rule replacement %q: %v", repl, err)
	}
	return r, body, true, nil
}

// cutUnescaped splits s at the first '/' not preceded by a backslash; a
// backslash and the character after it stay as they are (regular
// expression escapes).
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// javaReplacement converts a Java Matcher.replaceAll replacement to
// regexp.Expand syntax. groups is the pattern's capture group count.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 >= len(s) {
				return "", errors.New("trailing backslash")
			}
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case '$':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == i+1 {
				return "", errors.New("'$' must be followed by a group number (write \\$ for a literal '$')")
			}
			digits := s[i+1 : j]
			// Kafka treats a reference past the last group as literal text
			// ("$4" with 3 groups), taking the longest prefix that names a
			// group ("$12" with 3 groups is group 1, then "2").
			n, k := 0, 0
			for k < len(digits) {
				d := n*10 + int(digits[k]-'0')
				if k > 0 && d > groups {
					break
				}
				n = d
				k++
			}
			if n > groups {
				b.WriteString("$$")
				b.WriteString(digits)
			} else {
				b.WriteString("${" + strconv.Itoa(n) + "}")
				b.WriteString(digits[k:])
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Name maps a distinguished name (SubjectDN's form) to a principal name.
func (m *Mapper) Name(dn string) (string, error) {
	for i := range m.rules {
		if name, ok := m.rules[i].apply(dn); ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w (%s; rules %q)", ErrNoMatchingRule, dn, m.text)
}

// String returns the rules as configured.
func (m *Mapper) String() string { return m.text }

func (r *rule) apply(dn string) (string, bool) {
	if r.isDefault {
		return dn, true
	}
	if !r.full.MatchString(dn) {
		return "", false
	}
	out := r.re.ReplaceAllString(dn, r.repl)
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upp:
		out = strings.ToUpper(out)
	}
	return out, true
}
