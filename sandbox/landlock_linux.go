package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockABI returns the kernel's Landlock ABI version, capped at the
// newest go-landlock knows (landlock.V11); 0 when Landlock is
// unavailable.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return 0
	}
	return min(v, 11)
}

// systemRODirs are the directories every command may read and execute
// from, when they exist.
var systemRODirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc"}

// confineLandlock confines the calling thread: the private mount namespace
// with a read-only .git, Landlock, the seccomp network filter and no
// capabilities. The working directory is the workspace.
func confineLandlock(cfg *helperConfig) error {
	if cfg.GitRO {
		if err := readOnlyGit(); err != nil {
			return err
		}
	}
	want := landlock.V11
	if cfg.Network {
		want.HandledAccessNet = 0
	}
	// The borrowed object directories, read-only, through the
	// descriptors the parent opened following no symbolic link.
	objects := make([]string, len(cfg.ObjectFDs))
	for i, fd := range cfg.ObjectFDs {
		objects[i] = "/proc/self/fd/" + strconv.Itoa(fd)
	}
	rules := []landlock.Rule{
		landlock.RODirs(cfg.RODirs...).IgnoreIfMissing(),
		landlock.RODirs(objects...),
		landlock.RWDirs(cfg.RWDirs...).WithRefer().IgnoreIfMissing(),
		landlock.ROFiles(append(cfg.ROFiles, "/dev/random", "/dev/urandom")...).IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full").IgnoreIfMissing(),
		// The workspace is the working directory, which the helper
		// entered from the descriptor it was given: never a path looked
		// up again. It gets every right the ruleset handles.
		landlock.PathAccess(want.HandledAccessFS, "."),
	}
	fd, flags, err := want.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("sandbox helper: landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("sandbox helper: landlock restricts nothing on this kernel")
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox helper: no_new_privs: %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("sandbox helper: landlock: %w", err)
	}
	if !cfg.Network {
		if err := denySockets(); err != nil {
			return err
		}
	}
	if cfg.DropCaps {
		if err := dropCapabilities(); err != nil {
			return err
		}
	}
	return nil
}

// readOnlyGit binds the workspace's .git (relative to the working
// directory) read-only in a mount namespace of the calling thread's own.
// Landlock cannot take back a right below a directory it granted, so this
// is how .git stays read-only inside a writable workspace.
func readOnlyGit() error {
	if _, err := os.Lstat(".git"); err != nil {
		return nil // no .git: nothing to protect
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return errNoMountNS
		}
		return fmt.Errorf("sandbox helper: mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox helper: private mounts: %w", err)
	}
	if err := unix.Mount(".git", ".git", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("sandbox helper: bind .git: %w", err)
	}
	if err := unix.Mount("", ".git", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("sandbox helper: read-only .git: %w", err)
	}
	return nil
}

// dropCapabilities empties the calling thread's capability bounding,
// ambient, inheritable, permitted and effective sets, so that a command
// run as root cannot load modules, reboot or undo the mounts.
func dropCapabilities() error {
	for c := 0; c <= 63; c++ {
		// EPERM: no CAP_SETPCAP (a user namespace without root); such a
		// process gains no capability by exec under no_new_privs anyway.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("sandbox helper: drop capability %d: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox helper: drop capabilities: %w", err)
	}
	return nil
}
