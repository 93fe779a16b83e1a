package agent

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
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
	s.SameResult = orDefault(s.SameResult, 4)
	s.SameError = orDefault(s.SameError, 3)
	s.Alternating = orDefault(s.Alternating, 6)
	s.Window = orDefault(s.Window, 10)
	s.WindowRepeats = orDefault(s.WindowRepeats, 5)
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
	buf    []byte // the hash input being built, reused between calls
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
	d.recent = append(d.recent, signature{call: d.callSignature(call), result: d.resultSignature(obs), failed: obs.IsError})
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

// callSignature hashes a call's tool and arguments.
func (d *stuckDetector) callSignature(call *gen.ToolCall) [sha256.Size]byte {
	d.buf = appendObject(appendString(d.buf[:0], call.ToolName), call.Arguments, nil)
	return sha256.Sum256(d.buf)
}

// resultSignature hashes what an observation says: its error flag and
// code, and its structured data without durations (keys ending in _ms,
// such as run_command's duration_ms), else its content.
func (d *stuckDetector) resultSignature(obs *gen.Observation) [sha256.Size]byte {
	b := canonical(d.buf[:0], obs.IsError)
	if obs.ErrorCode != nil {
		b = appendString(append(b, 'e'), string(*obs.ErrorCode))
	}
	if obs.Data == nil {
		b = appendString(append(b, 'c'), obs.Content)
	} else {
		b = appendObject(b, *obs.Data, func(k string) bool { return strings.HasSuffix(k, "_ms") })
	}
	d.buf = b
	return sha256.Sum256(b)
}

// canonical appends v, a decoded JSON value, to b in an encoding that is
// the same for equal values and differs for different ones: object keys in
// order, strings prefixed with their length. It is the stuck detector's
// hash input, cheaper per step than encoding the value as JSON; a value of
// another type is encoded as JSON (or as "?" when it does not encode).
func canonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, 'n')
	case bool:
		return append(strconv.AppendBool(append(b, 'b'), v), ';')
	case float64:
		return append(strconv.AppendFloat(append(b, 'f'), v, 'g', -1, 64), ';')
	case string:
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for _, e := range v {
			b = canonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		return appendObject(b, v, nil)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return append(b, '?')
	}
	return appendString(append(b, 'j'), string(data))
}

func appendString(b []byte, s string) []byte {
	return append(append(strconv.AppendInt(append(b, 's'), int64(len(s)), 10), ':'), s...)
}

// appendObject appends m's entries in key order, but those whose key skip
// (when not nil) reports.
func appendObject(b []byte, m map[string]any, skip func(string) bool) []byte {
	keys := make([]string, 0, 8)
	for k := range m {
		if skip == nil || !skip(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	b = append(b, '{')
	for _, k := range keys {
		b = canonical(appendString(b, k), m[k])
	}
	return append(b, '}')
}
