// Package secretshape tells whether a text has the shape of a credential:
// an API key, an access token, a JWT. It is the one place specloop keeps
// those shapes, for every record that must not carry one verbatim (the
// trace's call ids; the transcript's redaction).
//
// It judges shape, not secrecy: it finds the well-known key formats by
// their prefixes, and long high-entropy tokens by their characters. A
// secret without a known prefix that is short, or of one letter case (all
// hexadecimal, as a git commit id, say), or without a digit, is not found,
// nor is a PEM block (it is not one token); text that only looks like a
// key is.
package secretshape

import "math"

// A prefixed shape: a well-known key prefix at the start of a token,
// followed by at least min characters of its body.
type prefixed struct {
	prefix string
	body   func(c byte) bool
	min    int
}

// base64url bodies: letters, digits, - and _.
func keyChar(c byte) bool { return alnum(c) || c == '-' || c == '_' }

// Upper-case letters and digits (AWS access key ids).
func upperDigit(c byte) bool { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// A JWT's three base64url parts and their dots.
func jwtChar(c byte) bool { return keyChar(c) || c == '.' }

// prefixes are the well-known shapes.
var prefixes = []prefixed{
	{"sk-", keyChar, 16},      // OpenAI (sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-) and others
	{"sk_live_", keyChar, 16}, // Stripe
	{"sk_test_", keyChar, 16},
	{"rk_live_", keyChar, 16},
	{"rk_test_", keyChar, 16},
	{"github_pat_", keyChar, 20}, // GitHub fine-grained tokens
	{"ghp_", keyChar, 20},        // GitHub classic, OAuth, app and refresh tokens
	{"gho_", keyChar, 20},
	{"ghu_", keyChar, 20},
	{"ghs_", keyChar, 20},
	{"ghr_", keyChar, 20},
	{"glpat-", keyChar, 20}, // GitLab
	{"xoxa-", keyChar, 10},  // Slack
	{"xoxb-", keyChar, 10},
	{"xoxp-", keyChar, 10},
	{"xoxr-", keyChar, 10},
	{"xoxs-", keyChar, 10},
	{"xapp-", keyChar, 10},
	{"AKIA", upperDigit, 16}, // AWS access key ids
	{"ASIA", upperDigit, 16},
	{"AIza", keyChar, 30},  // Google API keys
	{"hf_", keyChar, 30},   // Hugging Face
	{"npm_", keyChar, 30},  // npm
	{"pypi-", keyChar, 50}, // PyPI
	{"eyJ", jwtChar, 16},   // a JWT: base64url of `{"`, its parts and dots
}

// MinLen is the length of the shortest span Find returns: a text shorter
// has no credential's shape.
const MinLen = 15 // xoxa- and 10 characters

// MinHighEntropy is the shortest token Find judges by its characters
// alone, without a known prefix.
const MinHighEntropy = 32

// minEntropy bounds the Shannon entropy, in bits per character, of a
// high-entropy token from below: random base64 of 32 characters has
// about 4.5, hexadecimal at most 4 (so it is never one), words and most
// identifiers less.
const minEntropy = 4.0

// Looks reports whether s holds text of a credential's shape (see Find).
// It takes bytes as they are, so a caller that scans a buffer copies
// nothing to ask.
func Looks[S ~string | ~[]byte](s S) bool {
	found := false
	scan(s, func(int, int) bool { found = true; return false })
	return found
}

// Find returns the spans of s, as [start, end) byte offsets in order and
// not overlapping, that have a credential's shape: a well-known key prefix
// (sk-, sk-proj-, sk-ant-, ghp_, github_pat_, xoxb-, AKIA, AIza, a JWT's
// eyJ, ...) at the start of a token and followed by enough key
// characters; or a token of at least MinHighEntropy letters, digits, +, /,
// - and _ that mixes upper-case and lower-case letters and digits with
// high entropy. A token starts
// where a letter or digit does not precede it.
func Find(s string) [][2]int {
	var spans [][2]int
	scan(s, func(i, j int) bool { spans = append(spans, [2]int{i, j}); return true })
	return spans
}

// scan calls found with each span Find returns, until it returns false.
func scan[S ~string | ~[]byte](s S, found func(i, j int) bool) {
	for i := 0; i < len(s); {
		if i > 0 && alnum(s[i-1]) {
			i++
			continue
		}
		if j := prefixedAt(s, i); j > i {
			if !found(i, j) {
				return
			}
			i = j
			continue
		}
		if i == 0 || !tokenChar(s[i-1]) {
			j := i
			for j < len(s) && tokenChar(s[j]) {
				j++
			}
			for j < len(s) && s[j] == '=' { // base64 padding
				j++
			}
			if j-i >= MinHighEntropy && highEntropy(s[i:j]) {
				if !found(i, j) {
					return
				}
				i = j
				continue
			}
		}
		i++
	}
}

// byFirst holds the indexes in prefixes of the prefixes that start with
// each byte, so that a token is tried only against those.
var byFirst = func() (b [256][]uint8) {
	for i, p := range prefixes {
		b[p.prefix[0]] = append(b[p.prefix[0]], uint8(i))
	}
	return b
}()

// prefixedAt returns the end of the prefixed shape at s[i:], or i for none.
func prefixedAt[S ~string | ~[]byte](s S, i int) int {
	for _, k := range byFirst[s[i]] {
		p := &prefixes[k]
		if len(s)-i < len(p.prefix) || string(s[i:i+len(p.prefix)]) != p.prefix {
			continue
		}
		j := i + len(p.prefix)
		for j < len(s) && p.body(s[j]) {
			j++
		}
		if j-i-len(p.prefix) >= p.min {
			return j
		}
	}
	return i
}

// highEntropy reports whether tok mixes upper-case and lower-case letters
// and digits with more than minEntropy bits per character.
func highEntropy[S ~string | ~[]byte](tok S) bool {
	var count [256]int
	upper, lower, digit := false, false, false
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		count[c]++
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	if !upper || !lower || !digit {
		return false
	}
	h, n := 0.0, float64(len(tok))
	for _, k := range count {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h > minEntropy
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// tokenChar is a character of a high-entropy token: base64 and base64url.
func tokenChar(c byte) bool { return keyChar(c) || c == '+' || c == '/' }
