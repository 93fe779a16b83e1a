// Package trace writes and reads a run's append-only JSONL trace: one
// TraceEvent (as the spec defines it) per line, each written before the run
// moves on, privacy-safe by default.
//
// Texts (the task, tool outputs, answers, feedback) are recorded only as
// Summary values, `chars=N;sha256=HEX`, and tool arguments only as their keys,
// so a trace can be shared without leaking what the agent saw. Names are
// recorded verbatim only when the spec defines them (the tools offered, the
// properties of their input schemas); a tool name or an argument key the
// model made up is recorded as its Summary too (see Names). A call id is
// recorded verbatim only when it is plain (letters, digits, _ and -, at
// most 64 bytes) and not shaped like a credential (sk-…, ghp_…, AKIA…, a
// JWT, a long high-entropy token); any other is recorded as its Summary,
// the same in each of the call's events.
package trace

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"
)

// Summary describes a text without revealing it: its length in characters
// and its SHA-256, as `chars=N;sha256=HEX`. Equal texts have equal summaries,
// so two runs can be compared without their contents.
func Summary(s string) string {
	sum := sha256.Sum256([]byte(s))
	var b [100]byte // the summary, built in one allocation: it is made for every event
	out := strconv.AppendInt(append(b[:0], "chars="...), int64(utf8.RuneCountInString(s)), 10)
	return string(hex.AppendEncode(append(out, ";sha256="...), sum[:]))
}

// Names reports whether recorded, a tool name or an argument key as a
// trace records it, stands for name: the trace records names that the
// tool list and the tools' input schemas do not define as their Summary,
// and every other name verbatim.
func Names(recorded, name string) bool {
	return recorded == name || recorded == Summary(name)
}
