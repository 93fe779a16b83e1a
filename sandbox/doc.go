// Package sandbox runs a command confined to a workspace.
//
// A command runs through a small re-exec helper: the calling binary itself,
// started as "sandbox-exec" with a marker in its environment. This
// package's init runs the helper before main, so every program and test
// binary that imports the package can sandbox commands with no extra code
// (Main is for command dispatchers that name "sandbox-exec"). The helper
// confines the command with one of two backends and kills every process it
// left behind when it ends, times out, or the parent dies:
//
//   - Bwrap: bubblewrap builds a private mount namespace from read-only
//     system and toolchain directories, the workspace bound read-write
//     (its .git read-only), a private /tmp, a fresh /proc in a new PID
//     namespace and, unless the network is allowed, an empty network
//     namespace. All capabilities are dropped.
//   - Landlock: the helper restricts itself with Landlock (the same
//     read-only and read-write directories; TCP bind and connect denied;
//     signals and abstract unix sockets scoped), adds a seccomp filter that
//     allows only AF_UNIX sockets, binds .git read-only in a private mount
//     namespace, drops all capabilities, and then starts the command.
//
// Auto, the default, picks bwrap when it works on this machine and Landlock
// otherwise, and fails when neither does; None runs the command without
// confinement and is only used when asked for by name.
//
// Under both confining backends, Run also guards git directories, which
// git runs code from for whoever uses git there later: it records the
// git directories of the command's tree before the command (every .git
// entry, nested ones included, and every directory that looks like a git
// directory, with their configuration, hooks, HEAD, commondir and gitdir
// files), and the files of the work tree that the configuration of the
// repository the tree is in, or of a nested one, trusts (the hooks in the
// directory core.hooksPath names, such as husky's .husky, and the files
// include.path and includeIf.*.path name; read from the configuration
// files without running git, see gitshape.Repository), and, when every
// process of the command has ended, undoes what the command added or
// changed there and returns a *GitError naming it (see Run). None has no guard: an unconfined command can write any
// repository of the user anyway.
//
// Go commands in the sandbox build into a cache of their own,
// USER_CACHE_DIR/specloop/go-build, never into the user's GOCACHE, whose
// entries the user's own builds would link; they read through to the
// user's cache, which is read-only to them. The go command runs the
// helper executable as its GOCACHEPROG ("sandbox-gocache", marked like
// the helper, and executable inside both backends): a lookup is answered
// from the sandbox's cache, else from the user's, whose entries must be
// exactly of the go command's on-disk format with their output a regular
// file of the recorded size (anything else is a miss); every new entry
// goes to the sandbox's cache, its output ID checked against the hash of
// its body. The user's cache is bound read-only (bwrap) or granted read
// access only (Landlock), so no command, the cache program included, can
// add, change or remove an entry there. The cache program trims the
// sandbox's cache as the go command trims its own (files unused for five
// days go, once a day). A go command older than 1.24
// ignores GOCACHEPROG and builds with the sandbox's cache alone.
//
// A workspace whose git repository borrows objects (an isolated run's work
// tree, whose objects/info/alternates names its source's object store)
// gets read access to them: Policy.ObjectDirs, decided when the run's
// workspace is opened, are bound read-only (bwrap) or granted read access
// (Landlock), each opened again for every command from the root following
// no symbolic link. The guard restores the alternates file a command
// changed, so a later opening of the workspace reads what was there.
//
// Whatever the backend, a command gets an environment built from an
// allowlist (see Policy.PassEnv), a scratch HOME and TMPDIR, no standard
// input, and its working directory from the open directory handle it is
// given, never from a path looked up again.
package sandbox
