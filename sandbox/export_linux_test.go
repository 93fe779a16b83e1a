package sandbox

// ForceUserNS makes root take the unprivileged path to a read-only .git.
func ForceUserNS(on bool) { forceUserNS = on }
