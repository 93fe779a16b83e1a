package mcpclient

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/specloop/specloop/internal/textclip"
)

// BaseEnv are the variables of specloop's environment that every stdio
// server gets, when they are set (LC_* by prefix; on Windows also
// windowsEnv, which its programs need to start at all): where programs
// are, who and where the user is, the locale, the terminal, the time zone
// and the temporary directory. They differ from the sandbox's list
// (sandbox.Policy.PassEnv): a server runs as the user, outside the
// sandbox, and its runtime (npx, uvx, …) keeps its caches under the
// user's HOME.
//
// Nothing else of specloop's environment reaches a server — not the
// providers' API keys, the API server's token or any other secret — but
// the variables its Server.Env names.
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR"}

// windowsEnv are the variables Windows programs need (the system's
// directories, the user's profile and temporary directories, how a
// command is found).
var windowsEnv = []string{"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "USERNAME",
	"HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "TEMP", "TMP"}

// maxEnvNameLen bounds a variable's name (well beyond any real one).
const maxEnvNameLen = 128

// CheckEnvName checks that name is a portable variable name: a letter or
// _, then letters, digits and _.
func CheckEnvName(name string) error {
	ok := len(name) > 0 && len(name) <= maxEnvNameLen && !('0' <= name[0] && name[0] <= '9')
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	if !ok {
		return fmt.Errorf("the environment variable name %q is not a valid name (a letter or _, then letters, digits and _, at most %d)", textclip.Clip(name, 64), maxEnvNameLen)
	}
	return nil
}

// environ is the environment of a stdio server: the variables of environ
// (specloop's, as os.Environ gives it) that BaseEnv or names name, in
// environ's order. On Windows names are matched regardless of case, as
// its environment is.
func environ(environ []string, goos string, names []string) []string {
	allowed := slices.Concat(BaseEnv, names)
	if goos == "windows" {
		allowed = append(allowed, windowsEnv...)
	}
	out := []string{} // never nil: os/exec gives a nil Env this process's whole environment
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue // Windows keeps per-drive directories as "=C:=C:\\..."
		}
		if goos == "windows" {
			name = strings.ToUpper(name)
			if slices.ContainsFunc(allowed, func(a string) bool { return strings.ToUpper(a) == name }) {
				out = append(out, kv)
			}
			continue
		}
		if strings.HasPrefix(name, "LC_") || slices.Contains(allowed, name) {
			out = append(out, kv)
		}
	}
	return out
}

// serverEnviron is environ of this process.
func serverEnviron(names []string) []string {
	return environ(os.Environ(), runtime.GOOS, names)
}
