package agent

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"testing"

	"github.com/specloop/specloop/gen"
)

// The signatures are those of encoding/json: appendCanonical writes what
// json.Marshal writes, byte for byte, so the detector's verdicts do not
// depend on which encoder made them.
func TestAppendCanonicalIsJSONMarshal(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", `quo"te\`, "<a&b>", "tab\there", "é ☃", "bad \xff utf-8", "\u2028",
		0.0, math.Copysign(0, -1), 1.0, -7.0, 0.1, 1e-6, 1e-7, 1.5e-7, 123456789.0, 1e20, 1e21, 1.7976931348623157e308, 5e-324,
		3, int64(-4), json.Number("12"), uint8(7),
		map[string]any(nil), map[string]any{}, []any(nil), []any{},
		map[string]any{"b": 1.0, "a": []any{"x", nil, map[string]any{"z": false, "<": "&"}}, "": "empty", "é": 2.5},
		[]any{1.0, "two", []any{3.0}},
		map[string]string{"typed": "map"},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendCanonical([]byte("prefix"), v)
		if !ok || string(got) != "prefix"+string(want) {
			t.Errorf("appendCanonical(%#v) = %s, %v; json.Marshal %s", v, got, ok, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"a": []any{math.Inf(-1)}}, func() {}} {
		if got, ok := appendCanonical(nil, v); ok {
			t.Errorf("appendCanonical(%#v) = %s, want a failure as json.Marshal's", v, got)
		}
	}
}

// A call's signature is the sha256 of its JSON as encoding/json writes it,
// and that of the tool name alone when its arguments do not encode.
func TestCallSignatureIsTheCallsJSON(t *testing.T) {
	call := &gen.ToolCall{ToolName: "calculator", Arguments: map[string]any{"right": 7.0, "left": 12.0, "operation": "multiply"}}
	want, _ := json.Marshal(struct {
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
	}{call.ToolName, call.Arguments})
	if got, _ := callSignature(nil, call); got != sha256.Sum256(want) {
		t.Errorf("signature is not that of %s", want)
	}
	call.Arguments["left"] = math.NaN()
	if got, _ := callSignature(nil, call); got != sha256.Sum256([]byte("calculator")) {
		t.Error("arguments that do not encode: want the tool name's signature")
	}
}

func FuzzAppendCanonical(f *testing.F) {
	f.Add(`{"a":[1,"x",null,{"b":true}],"c":1e-7}`)
	f.Fuzz(func(t *testing.T, text string) {
		var v any
		if json.Unmarshal([]byte(text), &v) != nil {
			return
		}
		want, _ := json.Marshal(v)
		if got, ok := appendCanonical(nil, v); !ok || string(got) != string(want) {
			t.Errorf("appendCanonical = %s, %v; json.Marshal %s", got, ok, want)
		}
	})
}

// A result's signature is the sha256 of its error flag, code and data
// without durations as encoding/json writes them, else of its content.
func TestResultSignatureLeavesOutDurations(t *testing.T) {
	code := gen.ErrorCode("command_failed")
	data := map[string]any{"exit_code": 1.0, "duration_ms": 12.5, "stdout": "<out>"}
	obs := &gen.Observation{IsError: true, ErrorCode: &code, Content: "ignored", Data: &data}
	enc, _ := json.Marshal(map[string]any{"exit_code": 1.0, "stdout": "<out>"})
	want := sha256.Sum256(append(append(append([]byte{1}, code...), 0), enc...))
	if got, _ := resultSignature([]byte("stale")[:0], obs); got != want {
		t.Errorf("signature is not that of %s", enc)
	}
	obs.Data = nil
	if got, _ := resultSignature(nil, obs); got != sha256.Sum256(append(append([]byte{1}, code...), append([]byte{0}, "ignored"...)...)) {
		t.Error("a result without data: want the signature of its content")
	}
}
