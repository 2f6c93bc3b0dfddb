package docker

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/client"
	"github.com/moby/sys/user"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/agents/all"
	"github.com/sessionfs/sessionfs/backends"
	"github.com/sessionfs/sessionfs/layout"
)

// Mounted is the sessionfs mount a container's /session comes through: FUSE lets no uid but the mounting one
// in unless it was mounted with allow_other, root included.
type Mounted struct {
	Mountpoint string
	AllowOther bool
	Owner      uint32 // the uid that mounted it
}

// account is a container user, with the ids the host's kernel checks its accesses by.
type account struct {
	spec     string // as --user or the image named it ("" for the image's root)
	uid      uint32 // in the container
	host     uint32 // on the host: uid, or under a rootless engine the caller's for root and none for the others
	gid      uint32 // on the host, as host
	groups   []uint32
	override bool // CAP_DAC_OVERRIDE over the host's files: root of a rootful engine
}

// noID is a host id no file has: a rootless engine's subordinate ids own nothing of a session.
const noID = 1<<32 - 1

func (a account) String() string {
	if a.spec == "" || a.spec == strconv.Itoa(int(a.uid)) {
		return fmt.Sprintf("uid %d", a.uid)
	}
	return fmt.Sprintf("%s (uid %d)", a.spec, a.uid)
}

// containerUser chooses who container id (created, not started) runs as, before it starts: the given --user
// (b.opts.User), else the session's owner (root's sessions run as root, a user's as that user, so what the
// agent writes stays the owner's), with the image's own user kept when it is the owner. Whoever it is must be
// able to read and write the session's agent folders and enter the mount, or the run is refused with the fix:
// its turns would be lost. The container is created again when the user changes.
func (b *Backend) containerUser(ctx context.Context, id, imageUser string, spec backends.Spec) (string, error) {
	sess := spec.Folder
	if sess == nil {
		return b.opts.User, nil // no session open by descriptor: nothing to check against
	}
	rootless := Rootless(ctx, b.cli)
	uid, gid, err := sess.Owner()
	if err != nil {
		return "", err
	}
	owner := fmt.Sprintf("%d:%d", uid, gid)
	if rootless { // the engine's root is the caller on the host
		owner = "0:0"
	}
	chosen := b.opts.User
	acct, err := b.lookupUser(ctx, id, cmp.Or(chosen, imageUser), rootless)
	if err != nil {
		return "", err
	}
	if chosen == "" && acct.host != uint32(uid) {
		if acct.uid != 0 {
			fmt.Fprintf(os.Stderr, "sessionfs: the image's user, %s, is not the session's owner: the container runs as %s, the owner (--user chooses)\n", acct, owner)
		}
		chosen = owner
		if acct, err = b.lookupUser(ctx, id, chosen, rootless); err != nil {
			return "", err
		}
	}
	if err := b.canEnterMount(acct); err != nil {
		return "", err
	}
	denied, err := cannotUse(sess, acct, runAgent(spec))
	if err != nil {
		return "", err
	}
	if denied != nil {
		fix := "leave --user out to run as the session's owner (" + owner + ")"
		if b.opts.User == "" {
			fix = "give --user with a user who can, or give the session back to its owner (chown -R)"
		}
		return "", fmt.Errorf("container user %s cannot %s: %s", acct, denied, fix)
	}
	return chosen, nil
}

// canEnterMount refuses a user the mount will not let in: every access would fail with EACCES in the container.
func (b *Backend) canEnterMount(a account) error {
	m := b.opts.Mount
	if m == nil || m.AllowOther || m.Owner == a.host {
		return nil
	}
	return fmt.Errorf("container user %s cannot use the mount at %s: uid %d mounted it without --allow-other (remount with sessionfs mount --allow-other)",
		a, m.Mountpoint, m.Owner)
}

// maxAccountFile bounds what is read of the image's /etc/passwd and /etc/group.
const maxAccountFile = 4 << 20

// lookupUser resolves spec (docker run --user's form: name|uid[:group|gid]) against the container's own
// /etc/passwd and /etc/group, as its runtime (runc, through moby/sys/user) will: uid 0 when spec is "". Under a
// rootless engine its root is the caller on the host, and every other id one of the caller's subordinates.
func (b *Backend) lookupUser(ctx context.Context, id, spec string, rootless bool) (account, error) {
	var passwd, group []byte
	if namesAccount(spec) {
		var err error
		if passwd, group, err = b.readAccounts(ctx, id); err != nil {
			return account{}, err
		}
	}
	u, err := user.GetExecUser(spec, &user.ExecUser{}, bytes.NewReader(passwd), bytes.NewReader(group))
	if err != nil {
		return account{}, fmt.Errorf("container user %q: %w", spec, err)
	}
	a := account{spec: spec, uid: uint32(u.Uid), host: uint32(u.Uid), gid: uint32(u.Gid), override: u.Uid == 0}
	for _, g := range u.Sgids {
		a.groups = append(a.groups, uint32(g))
	}
	if rootless {
		a.host, a.gid, a.groups, a.override = noID, noID, nil, false
		if u.Uid == 0 {
			a.host, a.gid = uint32(os.Geteuid()), uint32(os.Getegid())
		}
	}
	return a, nil
}

// namesAccount says whether spec needs the image's accounts to be known: a name, or a uid without a group (whose
// group its passwd entry gives). Root ("") and uid:gid do not: reading them costs the engine a mount of the
// container's files each.
func namesAccount(spec string) bool {
	if spec == "" {
		return false
	}
	uid, gid, ok := strings.Cut(spec, ":")
	return !ok || !numeric(uid) || !numeric(gid)
}

func numeric(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

// readAccounts reads the image's /etc/passwd and /etc/group, both at once.
func (b *Backend) readAccounts(ctx context.Context, id string) (passwd, group []byte, err error) {
	var gerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		group, gerr = b.readFile(ctx, id, "/etc/group")
	}()
	passwd, err = b.readFile(ctx, id, "/etc/passwd")
	<-done
	return passwd, group, errors.Join(err, gerr)
}

// readFile reads file from container id's image, "" when the image has none (a scratch image: numeric users only).
func (b *Backend) readFile(ctx context.Context, id, file string) ([]byte, error) {
	rc, _, err := b.cli.CopyFromContainer(ctx, id, file)
	if err != nil {
		if client.IsErrNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("docker: read the image's %s: %w", file, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, nil // a link, or nothing: no accounts to read
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(io.LimitReader(tr, maxAccountFile))
			return b, err
		}
	}
}

// maxChecked bounds the entries cannotUse looks at: a session may hold any number of files.
const maxChecked = 4096

// cannotUse names, for a run of agent, the first of the session's folders and records a would be refused: the
// session's folder, its workspace, the agent's folder and what its conversations are recorded in (folders:
// read, write and enter; files: read and write). nil when a can use them all, as far as maxChecked entries
// tell, or when the run is no agent's (agent nil).
func cannotUse(sess *layout.Dir, a account, agent *agents.Agent) (denied, err error) {
	checked := 0
	check := func(rel string, st *unix.Stat_t, want uint32) error {
		checked++
		if allowed(st, a, want) {
			return nil
		}
		return fmt.Errorf("%s %s in the session (uid %d, mode %04o)", verb(want), rel, st.Uid, st.Mode&0o7777)
	}
	if agent == nil {
		return nil, nil // not an agent's run: what the command needs is its own business
	}
	for _, f := range sessionFolders(agent) {
		st, err := sess.Lstat(f.rel)
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG: // a record that is a file (a database)
			if denied := check(f.rel, &st, 6); denied != nil {
				return denied, nil
			}
			continue
		case unix.S_IFDIR:
			if denied := check(f.rel, &st, f.want); denied != nil {
				return denied, nil
			}
		default:
			continue
		}
		if !f.walk {
			continue
		}
		sub, err := sess.Sub(f.rel)
		if err != nil {
			continue // swapped for something else since the lstat
		}
		var refused error
		err = sub.Walk(func(rel string, st *unix.Stat_t) error {
			if checked >= maxChecked {
				return errStop
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				refused = check(f.rel+"/"+rel, st, 7)
			case unix.S_IFREG:
				refused = check(f.rel+"/"+rel, st, 6)
			}
			if refused != nil {
				return errStop
			}
			return nil
		})
		sub.Close()
		if refused != nil {
			return refused, nil
		}
		if err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
	}
	return nil, nil
}

var errStop = errors.New("stop")

// checkedFolder is a folder of the session a container's user must reach: want is its bits (4 read, 2 write,
// 1 enter); walk: and everything beneath it.
type checkedFolder struct {
	rel  string
	want uint32
	walk bool
}

// sessionFolders are the folders cannotUse checks for a run of agent: the session's own, its workspace, and the
// agent's folder with the folders it records its conversations in.
func sessionFolders(agent *agents.Agent) []checkedFolder {
	out := []checkedFolder{{".", 5, false}, {layout.WorkspaceDir, 7, false}, {agent.Dir, 7, false}}
	for _, r := range agent.Records {
		out = append(out, checkedFolder{agent.Dir + "/" + r, 7, true})
	}
	return out
}

// runAgent is the agent whose CLI spec's command is (claude, codex, ...), nil for any other command: a shell or a
// script is not judged by an agent's folders.
func runAgent(spec backends.Spec) *agents.Agent {
	if len(spec.Argv) == 0 {
		return nil
	}
	name := path.Base(spec.Argv[0])
	if a, err := all.ByName(name); err == nil && a.Name == name {
		return a
	}
	return nil
}

// allowed says whether a gets the want bits (4 read, 2 write, 1 enter) of st as the kernel grants them: root
// of a rootful engine (docker's default capabilities hold CAP_DAC_OVERRIDE) always, else the owner's, the
// group's or the others' bits.
func allowed(st *unix.Stat_t, a account, want uint32) bool {
	if a.override {
		return true
	}
	bits := st.Mode & 7
	switch {
	case st.Uid == a.host:
		bits = st.Mode >> 6 & 7
	case st.Gid == a.gid || slices.Contains(a.groups, st.Gid):
		bits = st.Mode >> 3 & 7
	}
	return bits&want == want
}

func verb(want uint32) string {
	if want&2 != 0 {
		return "write"
	}
	return "read"
}
