package roman

import "testing"

func TestFormat(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{1, "I"},
		{3, "III"},
		{4, "IV"},
		{9, "IX"},
		{14, "XIV"},
		{40, "XL"},
		{1994, "MCMXCIV"},
		{2024, "MMXXIV"},
		{3999, "MMMCMXCIX"},
	}
	for _, tt := range tests {
		got, err := Format(tt.n)
		if err != nil || got != tt.want {
			t.Errorf("Format(%d) = %q, %v; want %q", tt.n, got, err, tt.want)
		}
	}
}

func TestFormatOutOfRange(t *testing.T) {
	for _, n := range []int{0, -1, 4000} {
		if _, err := Format(n); err == nil {
			t.Errorf("Format(%d) succeeded", n)
		}
	}
}
