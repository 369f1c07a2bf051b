package sasl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrPlainMalformed: a PLAIN message is not
// [authzid] NUL authcid NUL passwd (RFC 4616 section 2).
var ErrPlainMalformed = errors.New("sasl: malformed PLAIN message")

// ErrPlainAuthzid: the client asked to act as another user, which Kafka
// refuses ("Authentication failed: Client requested an authorization id
// that is different from username").
var ErrPlainAuthzid = errors.New("sasl: PLAIN authorization id differs from user name")

// ParsePlain splits a PLAIN message (RFC 4616 section 2):
//
//	message = [authzid] UTF8NUL authcid UTF8NUL passwd
//
// authcid and passwd must not be empty; none of the three may hold NUL.
func ParsePlain(msg []byte) (authzid, user, password string, err error) {
	a, rest, ok := bytes.Cut(msg, []byte{0})
	if !ok {
		return "", "", "", ErrPlainMalformed
	}
	u, p, ok := bytes.Cut(rest, []byte{0})
	if !ok || len(u) == 0 || len(p) == 0 || bytes.IndexByte(p, 0) >= 0 ||
		!utf8.Valid(a) || !utf8.Valid(u) || !utf8.Valid(p) {
		return "", "", "", ErrPlainMalformed
	}
	return string(a), string(u), string(p), nil
}

type plainSession struct {
	v    PlainVerifier
	user string
	done bool
}

func (s *plainSession) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, ErrAuthFailed
	}
	s.done = true
	authzid, user, pass, err := ParsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	s.user = user
	if authzid != "" && authzid != user {
		return nil, false, ErrPlainAuthzid
	}
	ok, err := s.v.VerifyPlain(ctx, user, pass)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, ErrAuthFailed
	}
	return nil, true, nil
}

func (s *plainSession) User() string      { return s.user }
func (s *plainSession) Expiry() time.Time { return time.Time{} }

// PlainUsers is a PLAIN credentials file in memory
// (--sasl-plain-users-file). Each line is "user:password" or
// "user:$pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>"
// (HashPassword's form); blank lines and lines starting with '#' are
// skipped. A user name holds no ':'.
type PlainUsers struct {
	users map[string]plainEntry
}

type plainEntry struct {
	password   string // clear form
	salt, hash []byte // hashed form
	iterations int
}

const hashedPrefix = "$pbkdf2-sha256$"

// HashPassword returns password in the file's hashed form, with a random
// salt.
func HashPassword(password string, iterations int) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	h, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%s%d$%s$%s", hashedPrefix, iterations,
		base64.StdEncoding.EncodeToString(salt), base64.StdEncoding.EncodeToString(h))
}

// LoadPlainUsers reads a PLAIN credentials file.
func LoadPlainUsers(path string) (*PlainUsers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParsePlainUsers(f, path)
}

// ParsePlainUsers reads PlainUsers' format from r; name labels errors.
func ParsePlainUsers(r interface{ Read([]byte) (int, error) }, name string) (*PlainUsers, error) {
	pu := &PlainUsers{users: map[string]plainEntry{}}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(t) == "" || strings.HasPrefix(strings.TrimSpace(t), "#") {
			continue
		}
		user, pass, ok := strings.Cut(t, ":")
		if !ok || user == "" || pass == "" {
			return nil, fmt.Errorf("%s:%d: want user:password", name, line)
		}
		if _, dup := pu.users[user]; dup {
			return nil, fmt.Errorf("%s:%d: user %q listed twice", name, line, user)
		}
		var e plainEntry
		if rest, ok := strings.CutPrefix(pass, hashedPrefix); ok {
			parts := strings.Split(rest, "$")
			var err error
			if len(parts) == 3 {
				e.iterations, err = strconv.Atoi(parts[0])
				if err == nil {
					e.salt, err = base64.StdEncoding.DecodeString(parts[1])
				}
				if err == nil {
					e.hash, err = base64.StdEncoding.DecodeString(parts[2])
				}
			}
			if len(parts) != 3 || err != nil || e.iterations < 1 || len(e.hash) != sha256.Size {
				return nil, fmt.Errorf("%s:%d: malformed %s hash", name, line, hashedPrefix)
			}
		} else {
			e.password = pass
		}
		pu.users[user] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pu, nil
}

// Len is the number of users.
func (pu *PlainUsers) Len() int { return len(pu.users) }

// VerifyPlain implements PlainVerifier. The comparison takes the same time
// whatever the password's first differing byte.
func (pu *PlainUsers) VerifyPlain(_ context.Context, user, password string) (bool, error) {
	e, ok := pu.users[user]
	if !ok {
		return false, nil
	}
	if e.hash == nil {
		return subtle.ConstantTimeCompare([]byte(e.password), []byte(password)) == 1, nil
	}
	h, err := pbkdf2.Key(sha256.New, password, e.salt, e.iterations, sha256.Size)
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(h, e.hash) == 1, nil
}
