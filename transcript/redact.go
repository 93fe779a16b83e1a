package transcript

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/secretshape"
)

// Redacted is what a secret becomes in a transcript.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest value Redactor replaces wherever it occurs:
// a shorter value (FEATURE_KEY=1) would blank out ordinary text.
const MinSecretLen = 8

// Redactor replaces secrets in the lines of a transcript.
type Redactor struct {
	values []string // the secrets, longest first
	bytes  [][]byte // values, as bytes to look for in a line
}

// SecretName reports whether an environment variable's name says it holds
// a secret: it ends in _KEY, _TOKEN or _SECRET (or is KEY, TOKEN, SECRET),
// or contains PASSWORD, in any letter case. Provider keys (OPENAI_API_KEY,
// ANTHROPIC_API_KEY) and the server's SPECLOOP_TOKEN are among them.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range []string{"KEY", "TOKEN", "SECRET"} {
		if n == s || strings.HasSuffix(n, "_"+s) {
			return true
		}
	}
	return strings.Contains(n, "PASSWORD")
}

// NewRedactor returns a Redactor of the values of the variables of env
// ("NAME=VALUE", as os.Environ gives them) whose names hold secrets
// (SecretName), and of the secrets given besides (a token read from a
// file, the values of variables passed to commands). Values shorter than
// MinSecretLen are left out.
func NewRedactor(env []string, secrets ...string) *Redactor {
	r := &Redactor{}
	for _, kv := range env {
		if name, v, ok := strings.Cut(kv, "="); ok && SecretName(name) {
			secrets = append(secrets, v)
		}
	}
	for _, v := range secrets {
		if len(v) >= MinSecretLen && !slices.Contains(r.values, v) {
			r.values = append(r.values, v)
		}
	}
	slices.SortFunc(r.values, func(a, b string) int { return len(b) - len(a) })
	for _, v := range r.values {
		r.bytes = append(r.bytes, []byte(v))
	}
	return r
}

// Line redacts one JSON line (an encoded entry) string by string: in each
// string of it, every known secret, then every span shaped like a
// credential (secretshape.Find), becomes [REDACTED]. It returns the line,
// still valid JSON, and the number of replacements. Numbers, names and
// structure are left alone, and so are the opaque strings of reasoning
// blocks (opaque) but for the known secrets.
func (r *Redactor) Line(line []byte) ([]byte, int) {
	keep := opaque(line)
	// The shortest text a replacement needs: a known secret, or a span of
	// a credential's shape. Most of a line's strings (its keys, enum
	// values, numbers as text) are shorter.
	short := secretshape.MinLen
	if k := len(r.values); k > 0 {
		short = min(short, len(r.values[k-1])) // longest first
	}
	var out []byte // nil until something is replaced
	n, last, keys := 0, 0, false
	for i := 0; i < len(line); {
		if line[i] != '"' {
			i++
			continue
		}
		j, escaped := i+1, false
		for j < len(line) && line[j] != '"' {
			if line[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		j = min(j+1, len(line)) // past the closing quote
		if j-i-2 < short {
			i = j // too short to hold a secret, even escaped
			continue
		}
		var s string
		if body := line[i+1 : j-1]; !escaped {
			// Most strings hold nothing to redact: ask without a copy.
			if !r.hit(body, keep) {
				i = j
				continue
			}
			s = string(body)
		} else if unquoted, err := jsontext.AppendUnquote(nil, line[i:j]); err == nil {
			s = string(unquoted)
		} else {
			i = j // not a string literal: not a line Writer wrote
			continue
		}
		text := r.Text
		if keep[s] {
			text = r.known
		}
		if red, k := text(s); k > 0 {
			out = append(out, line[last:i]...)
			out = appendString(out, red)
			n, last = n+k, j
			keys = keys || bytes.HasPrefix(bytes.TrimLeft(line[j:], " \t\r\n"), []byte(":"))
		}
		i = j
	}
	if out == nil {
		return line, 0
	}
	out = append(out, line[last:]...)
	// Two object keys redacted alike would make the line one a strict
	// reader refuses (a duplicate key): encoded again, the line keeps one
	// of them, and stays readable. Only a redacted key can do that.
	if !keys {
		return out, n
	}
	if _, err := schema.Decode(out); err != nil {
		var v any
		if json.Unmarshal(out, &v) == nil {
			if again, err := json.Marshal(v); err == nil {
				out = again
			}
		}
	}
	return out, n
}

// Text redacts one text: every known secret, then every span shaped like
// a credential, becomes [REDACTED]; it returns the text and the number of
// replacements.
func (r *Redactor) Text(s string) (string, int) {
	s, n := r.known(s)
	spans := secretshape.Find(s)
	if len(spans) == 0 {
		return s, n
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp[0]])
		b.WriteString(Redacted)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String(), n + len(spans)
}

// appendString appends s as a JSON string literal, without escaping <, >
// and & (a transcript is not HTML); invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it.
func appendString(dst []byte, s string) []byte {
	out, _ := jsontext.AppendQuote(dst, s)
	return out
}

// opaque returns the signatures and encrypted data of the reasoning blocks
// in an encoded entry (under the "reasoning" of its action, or of the
// actions of its compacted history): tokens a provider made and wants back
// unchanged, which, long and random, look like credentials. Shape-redacted,
// a resumed or continued run would send the provider a broken block; the
// secrets Redactor knows by value are still replaced in them.
func opaque(line []byte) map[string]bool {
	// Looked for from its letters: a quote, the first byte of the key,
	// is in every string of the line and would stop the search at each.
	if !bytes.Contains(line, []byte(`reasoning"`)) {
		return nil
	}
	var v any
	if json.Unmarshal(line, &v) != nil {
		return nil
	}
	keep := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if blocks, ok := x.([]any); ok && k == "reasoning" {
					for _, b := range blocks {
						if b, ok := b.(map[string]any); ok {
							for _, f := range []string{"signature", "data"} {
								if s, ok := b[f].(string); ok {
									keep[s] = true
								}
							}
						}
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return keep
}

// hit reports whether Text (or known, for a string of keep) would
// replace anything in the unescaped string b.
func (r *Redactor) hit(b []byte, keep map[string]bool) bool {
	for _, v := range r.bytes {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return !keep[string(b)] && secretshape.Looks(b)
}

// known replaces the known secrets of s alone.
func (r *Redactor) known(s string) (string, int) {
	n := 0
	for _, v := range r.values {
		if k := strings.Count(s, v); k > 0 {
			n += k
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return s, n
}
