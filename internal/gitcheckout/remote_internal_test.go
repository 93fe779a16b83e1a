package gitcheckout

import (
	"slices"
	"strings"
	"testing"
)

// None of the process's environment but PATH and the proxy variables
// reaches git on a remote clone: a server's secrets stay its own.
func TestRemoteEnvHoldsNoneOfTheProcesss(t *testing.T) {
	t.Setenv("SPECLOOP_TEST_SECRET", "s3cret")
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("GIT_ASKPASS", "/bin/echo")
	t.Setenv("HTTPS_PROXY", "http://proxy.example:3128")
	env := Remote{}.env()
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if strings.Contains(value, "s3cret") || strings.Contains(value, "sk-test") || name == "GIT_ASKPASS" {
			t.Errorf("git's environment holds %s", kv)
		}
	}
	if !slices.Contains(env, "HTTPS_PROXY=http://proxy.example:3128") {
		t.Error("the proxy variable did not reach git")
	}
	if !slices.Contains(env, "GIT_CONFIG_GLOBAL=/dev/null") || !slices.Contains(env, "GIT_ALLOW_PROTOCOL=https") {
		t.Errorf("env = %v", env)
	}
}
