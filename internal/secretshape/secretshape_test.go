package secretshape_test

import (
	"crypto/rand"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/specloop/specloop/internal/secretshape"
)

// Fake keys of each well-known shape, and one inside a text.
var keys = []string{
	"sk-proj-" + strings.Repeat("A", 48),
	"sk-ant-api03-" + strings.Repeat("x", 40),
	"sk-svcacct-abcdefghij0123456789",
	"sk-1234567890abcdefABCDEF",
	"sk_live_4eC39HqLyjWDarjtT1zdp7dc",
	"ghp_" + strings.Repeat("a1", 18),
	"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
	"glpat-abcdefghij0123456789",
	"xoxb-1234567890-abcdefghij",
	"xoxp-1234-5678-abcdef",
	"AKIAIOSFODNN7EXAMPLE",
	"ASIAIOSFODNN7EXAMPLE",
	"AIzaSyA-abcdefghijklmnopqrstuvwxyz012",
	"hf_" + strings.Repeat("abcdef", 6),
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
	// high entropy, no known prefix
	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"Zx81kQpL2vN7rT0aYb5cWd3eFg6hJi9m",
	"abc0defghij1klmno2pqrst3uvwxy4Z5",
}

// Texts that are not keys: provider call ids, words, identifiers, paths,
// hexadecimal (commit ids, digests), and key prefixes without a key.
var notKeys = []string{
	"",
	"call_X8mN2pQrS7tUvW9yZa1bC3dE", // OpenAI chat completions
	"toolu_01A09q90qw90lq917835lq9", // Anthropic
	"chatcmpl-tool-3f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c", // vLLM
	"fc_67ca09c5efe0819096d0511c92b8c890096610f474011cc0",
	"approval-12",
	"c1",
	"task-sk-",
	"sk-short",
	"risk-assessment-of-the-whole-long-project-plan",
	"desk-0123456789abcdefghijkl", // sk- inside a word
	"AKIA-not-a-key",
	"TestBrowserHiddenCharactersAndMoreWordsHere",
	"a_very_long_snake_case_function_name_for_tests",
	"github.com/specloop/specloop/internal/secretshape",
	"3e55dc2d29d022c67e36ef3f7a6b5c0d9e8f7a6b",                         // a commit id
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", // a digest
	"eyJ",
	"notes.txt",
}

func TestLooks(t *testing.T) {
	for _, k := range keys {
		if !secretshape.Looks(k) {
			t.Errorf("Looks(%q) = false, want true", k)
		}
		for _, text := range []string{"token: " + k + "\n", "(" + k + ")", "x=" + k, "'" + k + "'"} {
			spans := secretshape.Find(text)
			if len(spans) != 1 || text[spans[0][0]:spans[0][1]] != k {
				t.Errorf("Find(%q) = %v, want the key alone", text, spans)
			}
		}
	}
	for _, s := range notKeys {
		if secretshape.Looks(s) {
			t.Errorf("Looks(%q) = true, want false (spans %v)", s, secretshape.Find(s))
		}
	}
}

// Random base64url tokens of MinHighEntropy characters and more are found
// (but for the rare one without a digit or a letter of either case, or
// repetitive).
func TestRandomTokens(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	missed := 0
	const n = 2000
	for range n {
		b := make([]byte, secretshape.MinHighEntropy)
		_, _ = rand.Read(b)
		for i := range b {
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		if !secretshape.Looks(string(b)) {
			missed++
		}
	}
	if missed > n/50 {
		t.Fatalf("missed %d of %d random tokens of %d characters", missed, n, secretshape.MinHighEntropy)
	}
}

func TestFindSeveral(t *testing.T) {
	a, b := keys[0], keys[10]
	text := "first " + a + " then " + b + "."
	spans := secretshape.Find(text)
	if len(spans) != 2 || text[spans[0][0]:spans[0][1]] != a || text[spans[1][0]:spans[1][1]] != b {
		t.Fatalf("Find = %v", spans)
	}
}

// FuzzFind: Find never fails, its spans lie in the text, in order and not
// overlapping, each span itself Looks like a key, and Looks agrees with
// Find; a key put into any text is found.
func FuzzFind(f *testing.F) {
	for _, s := range append(keys, notKeys...) {
		f.Add(s)
	}
	f.Add("sk-proj-" + strings.Repeat("=", 40))
	f.Add("\xff\xfesk-" + strings.Repeat("é", 20))
	f.Fuzz(func(t *testing.T, s string) {
		spans := secretshape.Find(s)
		last := 0
		for _, sp := range spans {
			if sp[0] < last || sp[1]-sp[0] < secretshape.MinLen || sp[1] > len(s) {
				t.Fatalf("Find(%q) = %v: spans out of order or bounds", s, spans)
			}
			if !secretshape.Looks(s[sp[0]:sp[1]]) {
				t.Fatalf("Find(%q): the span %q does not Look like a key", s, s[sp[0]:sp[1]])
			}
			last = sp[1]
		}
		if secretshape.Looks(s) != (len(spans) > 0) {
			t.Fatalf("Looks(%q) disagrees with Find", s)
		}
		key := keys[len(s)%len(keys)]
		planted := s + " " + key + " " + s
		if !secretshape.Looks(planted) {
			t.Fatalf("the key %q in %q is not found", key, planted)
		}
		if utf8.ValidString(s) {
			found := false
			for _, sp := range secretshape.Find(planted) {
				if strings.Contains(planted[sp[0]:sp[1]], key) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no span of %q holds the key %q: %v", planted, key, secretshape.Find(planted))
			}
		}
	})
}
