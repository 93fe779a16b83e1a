package mcpclient_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/mcpclient"
)

// serverEnv starts srv and returns the environment it runs with.
func serverEnv(t *testing.T, srv mcpclient.Server) map[string]string {
	t.Helper()
	rt := open(t, srv, mcpclient.Config{})
	obs := call(t, rt, srv.Name+"__env", nil)
	if obs.IsError {
		t.Fatalf("env: %+v", obs)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(obs.Content, "\n") {
		if name, value, ok := strings.Cut(kv, "="); ok {
			env[name] = value
		}
	}
	return env
}

// An MCP server may be anyone's program: specloop's own secrets (the
// providers' API keys, the API server's token, whatever else its
// environment holds) must not reach a stdio server that was not given
// them.
func TestStdioServerGetsNoSecrets(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":        "sk-proj-attack-openai",
		"ANTHROPIC_API_KEY":     "sk-ant-attack-anthropic",
		"SPECLOOP_TOKEN":        "attack-specloop-token",
		"AWS_SECRET_ACCESS_KEY": "attack-aws",
	}
	for name, value := range secrets {
		t.Setenv(name, value)
	}
	env := serverEnv(t, mcpclient.Server{Name: "ext", Command: stdioCommand(t)})
	for name, value := range secrets {
		if _, ok := env[name]; ok {
			t.Errorf("the server sees %s", name)
		}
		for got, v := range env {
			if strings.Contains(v, value) {
				t.Errorf("the server sees the value of %s in %s", name, got)
			}
		}
	}
}

// A stdio server gets the harmless variables of BaseEnv and those its
// Server.Env names, and nothing of a named variable that is not set.
func TestStdioServerGetsBaseAndNamedVariables(t *testing.T) {
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_TIME", "C")
	t.Setenv("SPECLOOP_TEST_MCP_TOKEN", "given")
	t.Setenv("SPECLOOP_TEST_MCP_OTHER", "not given")
	srv := mcpclient.Server{Name: "ext", Command: stdioCommand(t), Env: []string{"SPECLOOP_TEST_MCP_TOKEN", "SPECLOOP_TEST_MCP_UNSET"}}
	env := serverEnv(t, srv)
	for name, want := range map[string]string{"LANG": "C.UTF-8", "LC_TIME": "C", "SPECLOOP_TEST_MCP_TOKEN": "given", "PATH": os.Getenv("PATH")} {
		if got, ok := env[name]; !ok || got != want {
			t.Errorf("%s = %q (set: %v), want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"SPECLOOP_TEST_MCP_OTHER", "SPECLOOP_TEST_MCP_UNSET"} {
		if v, ok := env[name]; ok {
			t.Errorf("the server sees %s=%q", name, v)
		}
	}
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	parent := []string{"PATH=/bin", "OPENAI_API_KEY=sk-x", "LC_ALL=C", "HOME=/home/me", "GH_TOKEN=t", "=C:=C:\\", "NOEQUALS", "LC_=x"}
	for _, tc := range []struct {
		goos  string
		names []string
		want  []string
	}{
		{"linux", nil, []string{"PATH=/bin", "LC_ALL=C", "HOME=/home/me", "LC_=x"}},
		{"linux", []string{"GH_TOKEN"}, []string{"PATH=/bin", "LC_ALL=C", "HOME=/home/me", "GH_TOKEN=t", "LC_=x"}},
		{"linux", []string{"gh_token"}, []string{"PATH=/bin", "LC_ALL=C", "HOME=/home/me", "LC_=x"}},
		{"windows", []string{"gh_token"}, []string{"PATH=/bin", "HOME=/home/me", "GH_TOKEN=t"}},
	} {
		if got := mcpclient.Environ(parent, tc.goos, tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: %q, want %q", tc.goos, tc.names, got, tc.want)
		}
	}
	// Never nil, which os/exec would take for this process's whole
	// environment.
	if got := mcpclient.Environ([]string{"OPENAI_API_KEY=sk-x"}, "linux", nil); got == nil || len(got) != 0 {
		t.Errorf("%#v, want an empty, non-nil environment", got)
	}
	win := mcpclient.Environ([]string{"SystemRoot=C:\\Windows", "Path=C:\\bin", "ANTHROPIC_API_KEY=k"}, "windows", nil)
	if !slices.Equal(win, []string{"SystemRoot=C:\\Windows", "Path=C:\\bin"}) {
		t.Errorf("windows: %q", win)
	}
}

func TestServerEnvValidate(t *testing.T) {
	t.Parallel()
	cmd := []string{"server"}
	for _, name := range []string{"GH_TOKEN", "_X", "a1", "lower_case", strings.Repeat("A", 128)} {
		if err := (mcpclient.Server{Name: "s", Command: cmd, Env: []string{name}}).Validate(); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "1X", "A=B", "A B", "A-B", "A\x00", "Ä", "$HOME", strings.Repeat("A", 129)} {
		err := (mcpclient.Server{Name: "s", Command: cmd, Env: []string{name}}).Validate()
		quoted := fmt.Sprintf("%q", name)
		if len(name) > 64 { // a long name is quoted clipped
			quoted = `"` + name[:64]
		}
		if err == nil || !strings.Contains(err.Error(), `"s"`) || !strings.Contains(err.Error(), quoted) {
			t.Errorf("%q: %v, want an error naming the server and the name", name, err)
		}
	}
	err := (mcpclient.Server{Name: "web", URL: "https://example.com/mcp", Env: []string{"GH_TOKEN"}}).Validate()
	if err == nil || !strings.Contains(err.Error(), `"web"`) {
		t.Errorf("a URL server with Env: %v, want an error naming it", err)
	}
}

// Whatever name CheckEnvName accepts is one a process environment can
// hold as NAME=VALUE and that a shell could name.
func FuzzCheckEnvName(f *testing.F) {
	for _, s := range []string{"PATH", "GH_TOKEN", "1X", "A=B", "", "A\x00", "_"} {
		f.Add(s)
	}
	valid := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	f.Fuzz(func(t *testing.T, name string) {
		err := mcpclient.CheckEnvName(name)
		if (err == nil) != valid.MatchString(name) {
			t.Fatalf("CheckEnvName(%q) = %v", name, err)
		}
	})
}
