package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/mount"
	"github.com/sessionfs/sessionfs/session"
)

// app is what every command shares: the global flags and the store they name.
type app struct {
	storeFlag string
	store     *layout.Store
	wait      bool // --wait of the commands that run in a session: wait for its lease
}

func newRootCmd() *cobra.Command {
	a := &app{}
	root := &cobra.Command{
		Use:   "sessionfs",
		Short: "One session = one folder: keep coding-agent sessions in order",
		Long: `sessionfs keeps each coding-agent session (Claude Code and its kin) in one folder:
sessions/<id>/{app,workspace,mcps,.claude}. The store is plain folders; "sessionfs mount" shows it as a
filesystem where every .claude/projects/<cwd> name leads to the session's one transcript folder, so
"claude --resume" works from any working directory, on the host or in a container.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("sessionfs {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.storeFlag, "store", "",
		"the store folder (default $"+layout.EnvStore+", else $XDG_DATA_HOME/sessionfs, else ~/.local/share/sessionfs)")
	root.AddCommand(
		a.newCmd(), a.lsCmd(), a.showCmd(), a.rmCmd(), a.gcCmd(), a.envCmd(), a.execCmd(),
		a.mountCmd(), unmountCmd(), a.trashCmd(), a.importCmd(), a.findCmd(), a.watchCmd(),
		a.exportCmd(), a.forkCmd(), a.approveCmd(), a.labelCmd(), a.renameCmd(), a.runsCmd(), a.psCmd(), a.logsCmd(), a.logCmd(), a.searchCmd(), a.uiCmd(),
		versionCmd(),
	)
	root.AddCommand(a.backendCmds()...)
	strictUsage(root)
	return root
}

// openStore opens the store named by --store or the environment, once. A store folder that does not exist is an
// error (a mistyped --store must not become an empty store): only commands that make sessions make a store
// (createStore).
func (a *app) openStore() (*layout.Store, error) {
	return a.open(false)
}

// createStore is openStore for commands that make sessions (new, import, mount): a missing store is made, and
// said on stderr, so a mistyped --store shows at once.
func (a *app) createStore() (*layout.Store, error) {
	return a.open(true)
}

// errNoStore is openStore's error when the store folder does not exist.
var errNoStore = errors.New("no store")

// defaultStore reports whether the store is the default one, named by neither --store nor $SESSIONFS_STORE: a
// folder nobody can mistype, which a fresh machine has not made yet.
func (a *app) defaultStore() bool {
	return a.storeFlag == "" && os.Getenv(layout.EnvStore) == ""
}

// isDefaultStore reports whether root is the default store's folder and no $SESSIONFS_STORE names a store: what
// a shell with no setting of its own reaches (the page's commands and the mount's log leave it unnamed).
func isDefaultStore(root string) bool {
	def, err := layout.DefaultStoreRoot()
	return err == nil && def == root && os.Getenv(layout.EnvStore) == ""
}

func (a *app) open(create bool) (*layout.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	root := a.storeFlag
	if root == "" {
		var err error
		if root, err = layout.DefaultStoreRoot(); err != nil {
			return nil, err
		}
	}
	st, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !create:
		return nil, fmt.Errorf("%w at %s (sessionfs new, import or mount make one; check --store and $%s)", errNoStore, root, layout.EnvStore)
	case err == nil && !st.IsDir():
		return nil, fmt.Errorf("the store %s is not a folder (--store and $%s name a folder, made by sessionfs new if missing)", root, layout.EnvStore)
	}
	s, oerr := layout.OpenStore(root)
	if oerr != nil {
		return nil, oerr
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "sessionfs: created a new store at %s\n", s.Root)
	}
	a.store = s
	return s, nil
}

// sessionDir is where processes should see the session: through the mount when the store is mounted, so the
// transcript aliases apply; the store folder otherwise.
func sessionDir(s *layout.Store, id string) (dir string, mounted bool) {
	if m, ok := mount.Find(s.Root); ok {
		return session.Path(m.Mountpoint, id), true
	}
	return s.Dir(id), false
}

// notMounted is what to tell a user whose store is not served: that it is not mounted, or that its mount is
// stale (its daemon gone), which "sessionfs mount" clears.
func notMounted(s *layout.Store) string {
	if mnt, ok := mount.FindStale(s.Root); ok {
		return "the store's mount at " + mnt + " is stale (its daemon is gone; sessionfs mount serves it again)"
	}
	return "the store is not mounted"
}

// mountpoint is where the store is mounted, "" when it is not.
func mountpoint(s *layout.Store) string {
	if m, ok := mount.Find(s.Root); ok {
		return m.Mountpoint
	}
	return ""
}

// defaultMountpoint is ~/agent-sessions.
func defaultMountpoint() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return "agent-sessions"
	}
	return filepath.Join(home, "agent-sessions")
}

// envOr is the variable name's value, or def when it is unset or empty (defaults a test run or a unit file can set).
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
