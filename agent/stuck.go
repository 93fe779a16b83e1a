package agent

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/specloop/specloop/gen"
)

// StuckDetection configures loop detection: a run whose model keeps making
// the same calls with the same results is warned once (a ModelFeedback of
// kind stuck_warning) and, when it goes on, ends stuck. A call is its tool
// and its arguments (calls that differ in any argument never count as
// repeats); a result is its error flag, error code and structured data
// (its content when it has none), durations left out. Each pattern counts
// calls in a row, ending with the latest, so a model that changes course
// after the warning is not stopped by its past.
//
// The defaults are those of OpenHands' stuck detector and the issue that
// asked for it: 4, 3, 6, and more than 5 in the last 10.
type StuckDetection struct {
	// SameResult: the same call with the same result this many times in a
	// row; 0 means 4.
	SameResult int
	// SameError: the same call failing with the same error this many times
	// in a row; 0 means 3.
	SameError int
	// Alternating: two (call, result) pairs alternating (A, B, A, B…) over
	// this many calls; 0 means 6.
	Alternating int
	// Window and WindowRepeats: among the last Window (call, result) pairs,
	// the latest one seen more than WindowRepeats times; 0 means 10 and 5.
	Window        int
	WindowRepeats int
	// Disabled turns loop detection off.
	Disabled bool
}

func (s StuckDetection) withDefaults() StuckDetection {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&s.SameResult, 4)
	def(&s.SameError, 3)
	def(&s.Alternating, 6)
	def(&s.Window, 10)
	def(&s.WindowRepeats, 5)
	return s
}

// signature is a (call, result) pair as hashes: the detector keeps no text.
type signature struct {
	call, result [sha256.Size]byte
	failed       bool
}

// stuckDetector remembers the signatures of a run's latest calls.
type stuckDetector struct {
	cfg    StuckDetection
	recent []signature // the latest, oldest first, at most keep
	keep   int
	warned bool
	buf    []byte // the encoding being hashed, reused between calls
}

func newStuckDetector(cfg StuckDetection) *stuckDetector {
	if cfg.Disabled {
		return nil
	}
	cfg = cfg.withDefaults()
	return &stuckDetector{cfg: cfg, keep: max(cfg.SameResult, cfg.SameError, cfg.Alternating, cfg.Window) + 1}
}

// add records a call and its observation, and returns the pattern the
// latest calls now form, or "".
func (d *stuckDetector) add(call *gen.ToolCall, obs *gen.Observation) string {
	if len(d.recent) == d.keep {
		copy(d.recent, d.recent[1:])
		d.recent = d.recent[:d.keep-1]
	}
	sig := signature{failed: obs.IsError}
	sig.call, d.buf = callSignature(d.buf[:0], call)
	sig.result, d.buf = resultSignature(d.buf[:0], obs)
	d.recent = append(d.recent, sig)
	return d.pattern()
}

// pattern returns the description of the pattern the latest signatures
// form, or "".
func (d *stuckDetector) pattern() string {
	r := d.recent
	last := r[len(r)-1]
	same := 0 // the latest signature's run of repeats
	for i := len(r) - 1; i >= 0 && r[i] == last; i-- {
		same++
	}
	switch {
	case last.failed && same >= d.cfg.SameError:
		return fmt.Sprintf("the same call failed with the same error %d times in a row", same)
	case same >= d.cfg.SameResult:
		return fmt.Sprintf("the same call returned the same result %d times in a row", same)
	}
	// Alternating: the last n signatures equal themselves shifted by two.
	if n := d.cfg.Alternating; len(r) >= n && r[len(r)-2] != last && slices.Equal(r[len(r)-n:len(r)-2], r[len(r)-n+2:]) {
		return fmt.Sprintf("the same two calls alternated with the same results over %d calls", n)
	}
	seen := 0
	for _, s := range r[max(0, len(r)-d.cfg.Window):] {
		if s == last {
			seen++
		}
	}
	if seen > d.cfg.WindowRepeats {
		return fmt.Sprintf("the same call returned the same result %d times in the last %d calls", seen, min(len(r), d.cfg.Window))
	}
	return ""
}

// stuckMessage is the warning a model gets the first time.
func stuckMessage(pattern string) string {
	return "You are going in circles: " + pattern + ". Doing it again ends the run. " +
		"Read the last result carefully and try something different: other arguments, another tool, another file, or finish with what you have."
}

// callSignature hashes a call's tool and arguments as canonical JSON
// (encoding/json's, map keys sorted), encoded into b, which it returns.
func callSignature(b []byte, call *gen.ToolCall) ([sha256.Size]byte, []byte) {
	b = append(appendJSONString(append(b, `{"tool":`...), call.ToolName), `,"args":`...)
	b, ok := appendCanonical(b, call.Arguments)
	if !ok { // arguments that do not encode: the tool name alone
		return sha256.Sum256([]byte(call.ToolName)), b
	}
	b = append(b, '}')
	return sha256.Sum256(b), b
}

// resultSignature hashes what an observation says: its error flag and
// code, and its structured data without durations (keys ending in _ms,
// such as run_command's duration_ms), else its content; encoded into b,
// which it returns.
func resultSignature(b []byte, obs *gen.Observation) ([sha256.Size]byte, []byte) {
	flag := byte(0)
	if obs.IsError {
		flag = 1
	}
	b = append(b, flag)
	if obs.ErrorCode != nil {
		b = append(b, *obs.ErrorCode...)
	}
	b = append(b, 0)
	if obs.Data != nil {
		enc, ok := appendObject(b, *obs.Data, func(k string) bool { return !strings.HasSuffix(k, "_ms") })
		if ok {
			return sha256.Sum256(enc), enc
		}
	}
	b = append(b, obs.Content...)
	return sha256.Sum256(b), b
}

// appendCanonical appends v as json.Marshal encodes it, byte for byte, so
// signatures are those of encoding/json without its reflection: the JSON
// values a model's arguments and a tool's data are made of are written
// here, anything else by json.Marshal. It reports false for a value that
// does not encode.
func appendCanonical(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendJSONString(b, v), true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return b, false
		}
		// encoding/json's float format: exponents only outside [1e-6, 1e21),
		// written without a leading zero (1e-07 is 1e-7).
		format := byte('f')
		if abs := math.Abs(v); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
			format = 'e'
		}
		b = strconv.AppendFloat(b, v, format, -1, 64)
		if n := len(b); format == 'e' && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b, true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendObject(b, v, nil)
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendCanonical(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	enc, err := json.Marshal(v)
	return append(b, enc...), err == nil
}

// appendObject appends m as appendCanonical does, its keys sorted,
// leaving out those keep (when set) rejects.
func appendObject(b []byte, m map[string]any, keep func(string) bool) ([]byte, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if keep == nil || keep(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendCanonical(append(appendJSONString(b, k), ':'), m[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONString appends s quoted as json.Marshal quotes it: plain
// printable ASCII as it is, anything else (escapes, HTML characters,
// invalid UTF-8) by json.Marshal.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
