package schema_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/schema"
)

type operation string

type calcInput struct {
	Left      float64   `json:"left"`
	Operation operation `json:"operation"`
	Right     float64   `json:"right"`
}

type inner struct {
	Name  string   `json:"name"`
	Score *int     `json:"score,omitempty"`
	Tags  []string `json:"tags"`
}

type Embedded struct {
	Shared  string `json:"shared"`
	Promote int    `json:"promote"`
}

type EmbeddedPtr struct {
	Deep bool `json:"deep"`
}

type upper struct{ s string }

func (u *upper) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		return errors.New("empty SECRET")
	}
	u.s = strings.ToUpper(string(b))
	return nil
}

type pair struct{ a, b float64 }

func (p *pair) UnmarshalJSON(data []byte) error {
	var v [2]float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	p.a, p.b = v[0], v[1]
	return nil
}

type everything struct {
	Embedded
	*EmbeddedPtr
	S        string              `json:"s"`
	B        bool                `json:"b"`
	F64      float64             `json:"f64"`
	F32      float32             `json:"f32"`
	I        int                 `json:"i"`
	I8       int8                `json:"i8"`
	I32      int32               `json:"i32"`
	I64      int64               `json:"i64"`
	U16      uint16              `json:"u16"`
	PS       *string             `json:"ps"`
	PI       *int64              `json:"pi"`
	PP       **bool              `json:"pp"`
	List     []int               `json:"list"`
	Nested   inner               `json:"nested"`
	PNested  *inner              `json:"pnested"`
	Items    []inner             `json:"items"`
	PItems   []*inner            `json:"pitems"`
	Any      any                 `json:"any"`
	Map      map[string]any      `json:"map"`
	IntMap   map[string]int      `json:"int_map"`
	NameMap  map[operation]inner `json:"name_map"`
	When     time.Time           `json:"when"`
	PWhen    *time.Time          `json:"pwhen"`
	Raw      json.RawMessage     `json:"raw"`
	Bytes    []byte              `json:"bytes"`
	Arr      [3]int              `json:"arr"`
	Up       upper               `json:"up"`
	Pair     pair                `json:"pair"`
	Quoted   int                 `json:"quoted,string"`
	QuotedB  bool                `json:",string"`
	NoTag    string
	Hidden   string `json:"-"`
	Dash     string `json:"-,"`
	unexport string
	Shared   string `json:"shared"` // shallower than Embedded.Shared: wins
}

var bindInputs = []string{
	`{}`,
	`{"s":"x","b":true,"f64":1.5,"f32":2.25,"i":-3,"i8":127,"i32":-2147483648,"i64":9007199254740991,"u16":65535}`,
	`{"ps":"p","pi":42,"pp":true,"list":[1,2,3],"nested":{"name":"n","score":7,"tags":["a"]},"pnested":{"name":"pn","tags":null}}`,
	`{"items":[{"name":"a"},{"name":"b","tags":[]}],"pitems":[null,{"name":"c"}]}`,
	`{"any":{"k":[1,"two",null,true]},"map":{"a":1,"b":{"c":"d"}},"int_map":{"x":1,"y":2},"name_map":{"add":{"name":"n"}}}`,
	`{"when":"2024-01-02T03:04:05.123456789+02:00","pwhen":"2024-01-02T03:04:05Z","raw":{"a":[1,2]},"bytes":"aGVsbG8="}`,
	`{"arr":[1,2],"up":"shout","pair":[1.5,2.5],"quoted":"17","QuotedB":"true"}`,
	`{"NoTag":"exact","Hidden":"h","-":"dash","unexport":"u","shared":"top","promote":5,"deep":true}`,
	`{"notag":"folded","S":"folded s","SHARED":"folded shared"}`,
	`{"s":null,"ps":null,"list":null,"map":null,"any":null,"pnested":null,"i":null,"when":null}`,
	`{"unknown":1,"nested":{"unknown":{"x":1}}}`,
	`{"list":[],"items":[],"map":{},"bytes":[104,105]}`,
}

// TestBindLikeEncodingJSON binds decoded values and compares the result
// with what encoding/json makes of the same JSON.
func TestBindLikeEncodingJSON(t *testing.T) {
	for _, in := range bindInputs {
		var want everything
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("encoding/json %s: %v", in, err)
		}
		var got everything
		if err := schema.Bind(mustDecode(t, in), &got); err != nil {
			t.Errorf("Bind %s: %v", in, err)
			continue
		}
		if !jsonEqual(want.Raw, got.Raw) {
			t.Errorf("Bind %s: Raw = %s, want %s", in, got.Raw, want.Raw)
		}
		want.Raw, got.Raw = nil, nil
		opts := cmp.Options{
			cmp.AllowUnexported(everything{}, upper{}, pair{}),
			cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Errorf("Bind %s mismatch (-encoding/json +Bind):\n%s", in, diff)
		}
	}
}

func jsonEqual(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestBindIntoExisting(t *testing.T) {
	// Like encoding/json, Bind keeps what the JSON does not mention and
	// merges into existing maps.
	score := 1
	got := everything{S: "keep", Nested: inner{Name: "keep", Score: &score}, IntMap: map[string]int{"old": 1}}
	if err := schema.Bind(mustDecode(t, `{"nested":{"tags":["t"]},"int_map":{"new":2}}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.S != "keep" || got.Nested.Name != "keep" || got.Nested.Score != &score || len(got.Nested.Tags) != 1 {
		t.Errorf("got %+v", got)
	}
	if diff := cmp.Diff(map[string]int{"old": 1, "new": 2}, got.IntMap); diff != "" {
		t.Error(diff)
	}
}

func TestBindCalculatorInput(t *testing.T) {
	value := mustDecode(t, string(actionJSON)).(map[string]any)["arguments"]
	var in calcInput
	if err := schema.Bind(value, &in); err != nil {
		t.Fatal(err)
	}
	if want := (calcInput{Left: 12, Operation: "multiply", Right: 7}); in != want {
		t.Errorf("got %+v, want %+v", in, want)
	}
	var m map[string]any
	if err := schema.Bind(value, &m); err != nil || m["operation"] != "multiply" {
		t.Errorf("map: %v %v", m, err)
	}
	var a any
	if err := schema.Bind(value, &a); err != nil || a.(map[string]any)["left"] != 12.0 {
		t.Errorf("any: %v %v", a, err)
	}
}

type node struct {
	Name     string  `json:"name"`
	Children []*node `json:"children"`
	Next     *node   `json:"next"`
}

func TestBindRecursiveType(t *testing.T) {
	in := `{"name":"a","children":[{"name":"b","next":{"name":"c"}}],"next":{"name":"d","children":[]}}`
	var want, got node
	if err := json.Unmarshal([]byte(in), &want); err != nil {
		t.Fatal(err)
	}
	if err := schema.Bind(mustDecode(t, in), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		value string
		want  string
	}{
		{`{"s":123456}`, `field "/s": must be a string`},
		{`{"b":"SECRET"}`, `field "/b": must be a boolean`},
		{`{"f64":"SECRET"}`, `field "/f64": must be a number`},
		{`{"f32":1e39}`, `field "/f32": is out of range for Go type float32`},
		{`{"i":1.5}`, `field "/i": must be an integer`},
		{`{"i8":128}`, `field "/i8": is out of range for Go type int8`},
		{`{"i64":1e19}`, `field "/i64": is out of range for Go type int64`},
		{`{"u16":-1}`, `field "/u16": is out of range for Go type uint16`},
		{`{"u16":65536}`, `field "/u16": is out of range for Go type uint16`},
		{`{"list":[1,"SECRET"]}`, `field "/list/1": must be a number`},
		{`{"list":{"SECRET":1}}`, `field "/list": must be an array`},
		{`{"nested":{"score":"SECRET"}}`, `field "/nested/score": must be a number`},
		{`{"items":[{},{"tags":[1]}]}`, `field "/items/1/tags/0": must be a string`},
		{`{"pitems":[{"name":false}]}`, `field "/pitems/0/name": must be a string`},
		{`{"nested":"SECRET"}`, `field "/nested": must be an object`},
		{`{"int_map":{"a/b":"SECRET"}}`, `field "/int_map/a~1b": must be a number`},
		{`{"when":"SECRET-VALUE-123"}`, `field "/when": must be an RFC 3339 date-time`},
		{`{"when":123456}`, `field "/when": must be a string`},
		{`{"bytes":"SECRET!!"}`, `field "/bytes": must be base64`},
		{`{"up":""}`, `field "/up": is not valid for Go type schema_test.upper`},
		{`{"pair":"SECRET"}`, `field "/pair": is not valid for Go type schema_test.pair`},
		{`{"quoted":123456}`, `field "/quoted": must be a string holding a JSON value`},
		{`{"quoted":"SECRET"}`, `field "/quoted": must be a string holding a JSON value`},
		{`{"arr":[1,"SECRET"]}`, `field "/arr/1": must be a number`},
		{`{"S":123456}`, `field "/S": must be a string`},
	}
	for _, tt := range tests {
		var out everything
		err := schema.Bind(mustDecode(t, tt.value), &out)
		if got := errString(err); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.value, got, tt.want)
		}
		var e *schema.Error
		if err != nil && !errors.As(err, &e) {
			t.Errorf("%s: error %T is not a *schema.Error", tt.value, err)
		}
		if err != nil {
			checkNoEcho(t, err, tt.value)
		}
	}
	var out everything
	if err := schema.Bind(map[string]any{}, out); err == nil {
		t.Error("Bind into a non-pointer succeeded")
	}
	if err := schema.Bind(map[string]any{}, (*everything)(nil)); err == nil {
		t.Error("Bind into a nil pointer succeeded")
	}
	var ch struct {
		C chan int `json:"c"`
	}
	if err := schema.Bind(mustDecode(t, `{"c":null}`), &ch); err != nil {
		t.Errorf("null into a chan: %v", err)
	}
	if err := schema.Bind(mustDecode(t, `{"c":1}`), &ch); err == nil || err.Error() != `field "/c": cannot be stored in Go type chan int` {
		t.Errorf("number into a chan: %v", err)
	}
}

func TestBindConcurrent(t *testing.T) {
	value := mustDecode(t, bindInputs[2])
	done := make(chan error)
	for range 8 {
		go func() {
			var out everything
			done <- schema.Bind(value, &out)
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// foldCollision reports whether an object in v has two keys that differ but
// match case-insensitively; encoding/json then lets the later one win,
// which a map cannot tell.
func foldCollision(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			for k2 := range x {
				if k != k2 && strings.EqualFold(k, k2) {
					return true
				}
			}
			if foldCollision(x[k]) {
				return true
			}
		}
	case []any:
		for _, item := range x {
			if foldCollision(item) {
				return true
			}
		}
	}
	return false
}

// FuzzBind checks that Bind never panics and, where encoding/json
// succeeds, produces the same Go value.
func FuzzBind(f *testing.F) {
	for _, in := range bindInputs {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		value, err := schema.Decode(data)
		if err != nil {
			return
		}
		var got everything
		bindErr := schema.Bind(value, &got)
		var want everything
		if json.Unmarshal(data, &want) != nil || foldCollision(value) {
			return
		}
		if bindErr != nil {
			t.Fatalf("Bind failed where encoding/json succeeds: %v", bindErr)
		}
		if !jsonEqual(want.Raw, got.Raw) {
			t.Fatalf("Raw = %s, want %s", got.Raw, want.Raw)
		}
		want.Raw, got.Raw = nil, nil
		opts := cmp.Options{
			cmp.AllowUnexported(everything{}, upper{}, pair{}),
			cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		}
		if diff := cmp.Diff(want, got, opts); diff != "" {
			t.Fatalf("mismatch (-encoding/json +Bind):\n%s", diff)
		}
	})
}
