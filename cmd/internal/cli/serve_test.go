package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIsLoopback: serve listens without a token only where isLoopback
// says the address is loopback only.
func TestIsLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"[::1]:80", true}, {"localhost:1", true}, {"127.8.9.10:1", true},
		{"0.0.0.0:8080", false}, {":8080", false}, {"[::]:80", false}, {"192.168.1.2:80", false}, {"example.com:80", false}, {"nonsense", false},
	} {
		if got := isLoopback(tt.addr); got != tt.want {
			t.Errorf("isLoopback(%q) = %v", tt.addr, got)
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv(TokenEnv, " from-env \n")
	for _, tt := range []struct {
		name, path, want string
		fails            bool
	}{
		{"environment", "", "from-env", false},
		{"file", write("t", "from-file\n"), "from-file", false},
		{"empty file", write("e", "\n"), "", true},
		{"two lines", write("two", "a\nb\n"), "", true},
		{"missing file", filepath.Join(dir, "absent"), "", true},
	} {
		got, err := ReadToken(tt.path)
		if (err != nil) != tt.fails || got != tt.want {
			t.Errorf("%s: %q %v", tt.name, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "from-") {
			t.Errorf("%s: the error shows the token", tt.name)
		}
	}
}

// --clone-hosts takes HOST or HOST:PORT, comma separated, and refuses
// what is a URL, a path or user info rather than a host.
func TestParseCloneHosts(t *testing.T) {
	got, err := ParseCloneHosts(" example.com, git.example.org:8443,[::1]:9000,")
	if err != nil || strings.Join(got, " ") != "example.com git.example.org:8443 [::1]:9000" {
		t.Errorf("ParseCloneHosts = %q, %v", got, err)
	}
	for _, bad := range []string{"", ",", "https://example.com", "example.com/r", "u@example.com", "example.com:0", "example.com:x", "example.com:", ":443", "*.example.com", "a b"} {
		if hosts, err := ParseCloneHosts(bad); err == nil {
			t.Errorf("ParseCloneHosts(%q) = %q", bad, hosts)
		}
	}
}
