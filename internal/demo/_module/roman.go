// Package roman writes integers as Roman numerals.
package roman

import (
	"fmt"
	"strings"
)

// numerals pairs values with their symbols, largest first. The pairs such
// as 900 (CM) are the subtractive forms.
var numerals = []struct {
	value  int
	symbol string
}{
	{1000, "M"},
	{900, "CM"},
	{500, "D"},
	{400, "CD"},
	{100, "C"},
	{90, "XC"},
	{50, "L"},
	{40, "XL"},
	{10, "X"},
	{9, "IX"},
	{5, "V"},
	{1, "I"},
}

// Format returns n, from 1 to 3999, as a Roman numeral.
func Format(n int) (string, error) {
	if n < 1 || n > 3999 {
		return "", fmt.Errorf("roman: %d is out of range [1, 3999]", n)
	}
	var b strings.Builder
	for _, num := range numerals {
		for n >= num.value {
			b.WriteString(num.symbol)
			n -= num.value
		}
	}
	return b.String(), nil
}
