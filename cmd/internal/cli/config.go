package cli

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/specloop/specloop/internal/config"
	"github.com/specloop/specloop/internal/projectdocs"
)

// ConfigHomeEnv names the XDG base directory of a user's configuration.
const ConfigHomeEnv = "XDG_CONFIG_HOME"

// Configured is what the configuration files set for one command.
type Configured struct {
	// Files are the files that were read, the user's first.
	Files []string
	// Settings are the flags they set, in the order applied.
	Settings []config.Setting
	// Warnings are the repository's keys that were not applied.
	Warnings []string
}

// Args are the settings as flags ("--name=value"), to go in front of the
// command line's: its flags then win, and whatever records the arguments
// (a run's request, --continue, --resume) sees one list.
func (c Configured) Args() []string {
	var args []string
	for _, s := range c.Settings {
		args = append(args, "--"+s.Flag+"="+s.Value)
	}
	return args
}

// LocalConfig reads the user's file and the file of the repository that
// holds workspace, and returns what they set for the flags of fresh (a
// new, unparsed flag set of the command), profile's tables included.
func LocalConfig(fresh *flag.FlagSet, workspace, profile string) (Configured, error) {
	userPath, err := config.UserPath()
	if err != nil {
		return Configured{}, err
	}
	user, err := config.Read(userPath)
	if err != nil {
		return Configured{}, err
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return Configured{}, fmt.Errorf("--workspace: %w", err)
	}
	root := projectdocs.RepoRoot(ws)
	repo, err := config.ReadRepo(root)
	if err != nil {
		return Configured{}, err
	}
	return apply(fresh, user, repo, root, profile)
}

// FileConfig is what the file at path (the operator's, so trusted: a
// server's --config) sets for the flags of fresh.
func FileConfig(fresh *flag.FlagSet, path, profile string) (Configured, error) {
	f, err := config.Read(path)
	if err != nil {
		return Configured{}, err
	}
	if f == nil {
		return Configured{}, fmt.Errorf("--config %s: no such file", path)
	}
	return apply(fresh, f, nil, "", profile)
}

// Without is c less the settings of the flags named.
func (c Configured) Without(names ...string) Configured {
	c.Settings = slices.DeleteFunc(slices.Clone(c.Settings), func(s config.Setting) bool { return slices.Contains(names, s.Flag) })
	return c
}

func apply(fresh *flag.FlagSet, user, repo *config.File, root, profile string) (Configured, error) {
	var c Configured
	for _, f := range []*config.File{user, repo} {
		if f != nil {
			c.Files = append(c.Files, f.Path)
		}
	}
	var err error
	c.Settings, c.Warnings, err = config.Apply(fresh, user, repo, root, profile)
	if err != nil {
		return Configured{}, err
	}
	return c, nil
}

// ScanFlag returns the last value of flag name on a command line not yet
// parsed (-name V, --name V, -name=V or --name=V, before any "--"), for
// the flags that decide how the others are read. A malformed one is left
// for the parse to report.
func ScanFlag(args []string, name string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			if a == "--" {
				break
			}
			continue
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(args) {
			v, i = args[i+1], i+1
		} else if val, ok := strings.CutPrefix(a, name+"="); ok {
			v = val
		}
	}
	return v
}
