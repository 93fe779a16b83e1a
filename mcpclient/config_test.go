package mcpclient_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/mcpclient"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`npx -y @modelcontextprotocol/server-everything`, []string{"npx", "-y", "@modelcontextprotocol/server-everything"}},
		{`  a   b  `, []string{"a", "b"}},
		{`cmd 'two words' "and \"more\"" back\ slash`, []string{"cmd", "two words", `and "more"`, "back slash"}},
		{`echo $HOME ~ *.go | wc`, []string{"echo", "$HOME", "~", "*.go", "|", "wc"}},
		{`a'b'"c"d`, []string{"abcd"}},
		{`'' ""`, []string{"", ""}},
		{`"a\nb" 'a\nb'`, []string{`a\nb`, `a\nb`}},
		{``, nil},
	} {
		got, err := mcpclient.Split(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a\`} {
		if got, err := mcpclient.Split(bad); err == nil {
			t.Errorf("Split(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseServer(t *testing.T) {
	t.Parallel()
	s, err := mcpclient.ParseServer("fs=npx -y server /tmp/a=b")
	if err != nil || s.Name != "fs" || !slices.Equal(s.Command, []string{"npx", "-y", "server", "/tmp/a=b"}) || s.URL != "" {
		t.Fatalf("%+v %v", s, err)
	}
	s, err = mcpclient.ParseServer("web=https://example.com/mcp")
	if err != nil || s.URL != "https://example.com/mcp" || s.Command != nil {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"noequals", "=cmd", "a__b=cmd", "a_=cmd", "a.b=cmd", "x=", "x=  ", "x='", "x=http://", strings.Repeat("n", 33) + "=cmd"} {
		if s, err := mcpclient.ParseServer(bad); err == nil {
			t.Errorf("ParseServer(%q) = %+v, want an error", bad, s)
		}
	}
}
