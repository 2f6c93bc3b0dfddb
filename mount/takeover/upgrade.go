package takeover

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/agents"
	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// Upgrade: `sessionfs mount` on a mountpoint whose connection a holder keeps (takeover.go) hands the
// connection to the binary that runs it, instead of failing "already mounted". The agents using the mount wait a
// moment, as they do when a daemon is killed, and go on:
//
//  1. the new binary asks the holder over the mount's control socket (controlSocket: a folder only the mount's
//     owner may enter, and the peer's uid checked) for the state it keeps, and refuses, before anything stops,
//     a state of a format it does not read (handoverFormat, the node log's version);
//  2. it sends the holder a descriptor of itself (a path replaced meanwhile cannot race);
//  3. the holder tells the serving daemon to hand over (handover.go): it stops taking requests, finishes those
//     in flight, and exits; the requests it left are resent to the next daemon (FUSE_NOTIFY_RESEND);
//  4. the holder re-executes itself as the new binary, keeping the connection, the node log and the asker's
//     socket (holder_exec.go), so the holder is upgraded too; the binds go with the old holder and the new one
//     makes them again as they are used;
//  5. the new holder starts a daemon that takes the connection over, and once it serves tells the asker which
//     daemon and version serve.

// handoverFormat names the format of what a holder hands a new binary: the takeover configuration, the INIT and
// this protocol (the node log has its own version, checked beside it). A variable so that a test can build a
// binary that differs: -ldflags "-X github.com/sessionfs/sessionfs/mount/takeover.handoverFormat=...". 2: the lock owners'
// descriptors are handed over too (lockowners.go).
var handoverFormat = "2"

// Version is this build's version, as the holder tells it (set by main).
var Version = "unknown"

// holderState is what a holder tells of the mount it keeps.
type holderState struct {
	Store, Mountpoint string
	Format            string // its handoverFormat
	NodeLog           uint32 // the version in its node log's header
	Version           string // its build's (the serving daemon's)
	Daemon            int    // the serving daemon's pid
}

// controlRequest is a request on the control socket: "state", or "upgrade" (with a descriptor of the binary).
type controlRequest struct{ Ask string }

// upgradeReply is the holder's answer to "upgrade", once the new daemon serves (or why none does).
type upgradeReply struct {
	Daemon  int
	Version string
	Error   string
	Busy    bool // a hand-over is under way (errHandoverUnderWay, errNotServedYet): ask again once it ended
}

// The holder's answers to an upgrade asked for while another is under way: the asker waits and asks again.
var (
	errHandoverUnderWay = errors.New("another hand-over is under way")
	errNotServedYet     = errors.New("the mount is not served yet")
)

// controlDir is the folder of this user's mounts' control sockets: root's in /run; a normal user's beneath a
// folder of that user's, which no other user can make first: its runtime folder ($XDG_RUNTIME_DIR/sessionfs, when
// the folder is the user's), else its state folder ($XDG_STATE_HOME, else ~/.local/state: sessionfs/run in it).
// Only with neither (no home of the user's, or one too deep for a socket's name) is it a name in the temporary
// folder, where another user may make it first (ownDir refuses theirs; the user's upgrades then fail, saying so):
// before, every user without XDG_RUNTIME_DIR (sudo -u, cron, ssh without a login session) had its there, and a
// folder another user planted blocked every upgrade of its mounts.
func controlDir() string { return controlDirOf(os.Geteuid()) }

// controlDirOf is controlDir for a process of uid.
func controlDirOf(uid int) string {
	if uid == 0 {
		return "/run/sessionfs"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) && usersFolder(d, uid) {
		return filepath.Join(d, "sessionfs")
	}
	if d := stateDir(uid); d != "" {
		if dir := filepath.Join(d, "sessionfs", "run"); len(dir+"/mount-4294967295.sock") < maxSocketPath {
			return dir
		}
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("sessionfs-%d", uid))
}

// maxSocketPath bounds a unix socket's path (sun_path: 108 bytes with its NUL).
const maxSocketPath = 108

// stateDir is the state folder of uid: $XDG_STATE_HOME, else ~/.local/state, the first that is uid's (the
// deepest part of it that exists now is a folder of uid's: usersFolder); "" when neither is. In a session's
// process (agents.EnvSession set) $XDG_STATE_HOME is the session's own folder, set so by sessionfs for opencode
// and every program it starts: a folder the session writes, never the control folder.
func stateDir(uid int) string {
	var candidates []string
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) && os.Getenv(agents.EnvSession) == "" {
		candidates = append(candidates, filepath.Clean(d))
	}
	if home := os.Getenv("HOME"); filepath.IsAbs(home) {
		candidates = append(candidates, filepath.Join(home, ".local", "state"))
	}
	for _, d := range candidates {
		p := d
		for _, err := os.Lstat(p); err != nil && p != "/"; _, err = os.Lstat(p) {
			p = filepath.Dir(p)
		}
		if usersFolder(p, uid) {
			return d
		}
	}
	return ""
}

// usersFolder reports whether p is a folder of uid's that no other user may make a name in (writable by no one
// else: a sticky one still lets others make the name first).
func usersFolder(p string, uid int) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid && st.Mode&0o022 == 0
}

// controlSocket is the control socket of the mount whose FUSE connection is minor.
func controlSocket(minor uint32) string {
	return filepath.Join(controlDir(), fmt.Sprintf("mount-%d.sock", minor))
}

// ownDir makes the control folder dir (and the folders above it, 0700), or checks the one there: this user's,
// no link, and no one else's to enter, in a folder no other user may change the names in (this user's or root's,
// writable by no one else or sticky).
func ownDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("make the control folder: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make the control folder: %w", err)
	}
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return fmt.Errorf("%s is not a folder of this user's alone (mode %o, owner %d): remove it", dir, st.Mode&0o7777, st.Uid)
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return err
	}
	if (int(parent.Uid) != os.Geteuid() && parent.Uid != 0) || (parent.Mode&0o022 != 0 && parent.Mode&unix.S_ISVTX == 0) {
		return fmt.Errorf("%s is in a folder other users may change (mode %o, owner %d)", dir, parent.Mode&0o7777, parent.Uid)
	}
	return nil
}

// listenControl makes the holder's control socket and answers on it until stop is called.
func (h *Holder) listenControl() (stop func(), err error) {
	minor, err := h.host.Connection()
	if err != nil {
		return nil, err
	}
	if err := ownDir(controlDir()); err != nil {
		return nil, err
	}
	path := controlSocket(minor)
	_ = os.Remove(path) // a holder killed before left it; the folder is this user's alone
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("make the control socket: %w", err)
	}
	l.SetUnlinkOnClose(false) // an upgraded holder listens on the same path: only stop removes it
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			go h.answerControl(c)
		}
	}()
	return func() { l.Close(); _ = os.Remove(path) }, nil
}

// answerControl answers one request, from this user only (root's mount: root).
func (h *Holder) answerControl(c *net.UnixConn) {
	keep := false
	defer func() {
		if !keep {
			c.Close()
		}
	}()
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	fds := selfexec.ReceivedFDs(oob[:oobn])
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var req controlRequest
	if err := json.Unmarshal(buf[:n], &req); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	switch req.Ask {
	case "state":
		_ = json.NewEncoder(c).Encode(h.controlState())
	case "upgrade":
		if len(fds) != 1 {
			_ = json.NewEncoder(c).Encode(upgradeReply{Error: "no binary was sent"})
			return
		}
		if err := h.beginUpgrade(fds[0], c); err != nil {
			busy := errors.Is(err, errHandoverUnderWay) || errors.Is(err, errNotServedYet)
			_ = json.NewEncoder(c).Encode(upgradeReply{Error: err.Error(), Busy: busy})
			return
		}
		fds, keep = nil, true // the upgrade holds both now
	case "move": // to a holder in another pid namespace (holder_move.go)
		if err := h.beginMove(buf[:n], c); err != nil {
			busy := errors.Is(err, errHandoverUnderWay) || errors.Is(err, errNotServedYet)
			_ = json.NewEncoder(c).Encode(upgradeReply{Error: err.Error(), Busy: busy})
			return
		}
		keep = true
	}
}

// state is what this holder keeps, as the control socket tells it.
func (h *Holder) controlState() holderState {
	st := holderState{Store: h.cfg.Store, Mountpoint: h.cfg.Mountpoint, Format: handoverFormat, Version: Version}
	st.NodeLog = nodelog.VersionOf(NodesFD)
	h.hand.Lock()
	st.Daemon = h.daemon
	h.hand.Unlock()
	return st
}

func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// UpgradeResult says who serves a mount handed over.
type UpgradeResult struct {
	From, To string // the versions before and after
	Daemon   int    // the daemon that serves now
}

// ErrNoHolder: nothing keeps the mount's connection to hand it over (an unconfined mount, --takeover=false, or a
// build before upgrades): the caller says "already mounted", as before.
var ErrNoHolder = errors.New("no holder keeps the mount's connection")

// upgradeTimeout bounds the wait for the new daemon to serve.
const upgradeTimeout = time.Minute

// handoverWait bounds how long Upgrade waits for a hand-over under way to end (another sessionfs mount's: its
// holder stopping the daemon, executing the new binary with no control socket for a moment, starting the next
// daemon) before it hands the mount over itself.
const handoverWait = 30 * time.Second

// errHandoverBusy: the holder is in a hand-over (asked by another); Upgrade asks again once it ended.
var errHandoverBusy = errors.New("a hand-over of the mount is under way")

// errNoAnswer: the holder closed the control connection unanswered, as one does that executes a new binary (the
// request's connection goes with the image before): asked again while the mount is held.
var errNoAnswer = errors.New("the connection closed unanswered")

// Upgrade hands the mount at mnt, of the store at storeRoot, to this binary: ErrNoHolder when nothing keeps its
// connection. An incompatible state is refused before the serving daemon stops: it serves on. While another
// hand-over is under way it waits (up to handoverWait; waiting is called once, when it starts to) and then hands
// the mount over in turn, so that of two sessionfs mounts one after the other the last one's build serves.
func Upgrade(storeRoot, mnt string, waiting func()) (UpgradeResult, error) {
	mnt, err := filepath.Abs(mnt)
	if err != nil {
		return UpgradeResult{}, err
	}
	deadline := time.Now().Add(handoverWait)
	for {
		res, err := upgradeOnce(storeRoot, mnt)
		// A held mount whose control socket is gone, or closed unanswered, is one whose holder executes a new
		// binary: it listens again.
		busy := errors.Is(err, errHandoverBusy) || (errors.Is(err, ErrNoHolder) || errors.Is(err, errNoAnswer)) && held(mnt)
		if !busy {
			return res, err
		}
		if time.Now().After(deadline) {
			return UpgradeResult{}, fmt.Errorf("%s was being handed over for %s (by another sessionfs mount) and still is: try again, or look at the mount's log: %w", mnt, handoverWait, err)
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		time.Sleep(handoverPoll)
	}
}

// handoverPoll is how often Upgrade asks again while a hand-over is under way.
const handoverPoll = 20 * time.Millisecond

// held says whether a holder keeps the connection of the mount at mnt: its state file (in this user's control
// folder) names a process there, which holds the connection. Not HeldBy, which wants the holder's capabilities or
// command line too: in the middle of its exec a holder shows neither for a moment (its descriptors it does, through
// holdsConnection). A process there that shows no connection the kernel names counts as holding if it started
// before the file was last written: not one that took the pid of a holder killed since.
func held(mnt string) bool {
	minor, ok := inspect.Connection(mnt)
	if !ok {
		return false
	}
	var st Held
	fi, err := os.Stat(heldFile(minor))
	if err != nil {
		return false
	}
	if b, err := os.ReadFile(heldFile(minor)); err != nil || json.Unmarshal(b, &st) != nil || st.Holder <= 0 || !st.holderIsThere() {
		return false
	}
	if holds, known := inspect.HoldsConnection(st.Holder, int64(inspect.KernelDev(0, minor))); holds || known {
		return holds
	}
	started, ok := inspect.ProcessStart(st.Holder)
	return ok && !started.After(fi.ModTime().Add(time.Second))
}

// holderIsThere says whether the process with the holder's pid is the holder the file names, by its start: not one
// that took the pid of a holder killed since (a process of another user's, whose own mount may have the same
// connection number since), which sessionfs mount waited for, 30 s, and failed. A file of a build before says no
// start: believed.
func (st Held) holderIsThere() bool {
	if st.HolderStart == 0 {
		return true
	}
	start, ok := inspect.StartTicks(st.Holder)
	return ok && start == st.HolderStart
}

// upgradeOnce asks the holder of mnt once: errHandoverBusy while it is in a hand-over.
func upgradeOnce(storeRoot, mnt string) (UpgradeResult, error) {
	minor, ok := inspect.Connection(mnt)
	if !ok {
		return UpgradeResult{}, ErrNoHolder
	}
	var st holderState
	if err := askControl(minor, "state", -1, &st); err != nil {
		return UpgradeResult{}, err
	}
	if !sameFolder(st.Store, storeRoot) {
		return UpgradeResult{}, fmt.Errorf("%s serves the store %s, not %s (sessionfs unmount %s first)", mnt, st.Store, storeRoot, mnt)
	}
	if st.Format != handoverFormat || st.NodeLog != nodelog.Version {
		return UpgradeResult{}, fmt.Errorf("%s is served by sessionfs %s, whose state (format %s, node log %d) this build (%s: format %s, node log %d) does not read: it serves on; to change builds, sessionfs unmount %s and mount again",
			mnt, st.Version, st.Format, st.NodeLog, Version, handoverFormat, nodelog.Version, mnt)
	}
	self, err := unix.Open("/proc/self/exe", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return UpgradeResult{}, fmt.Errorf("open this binary to hand it over: %w", err)
	}
	defer unix.Close(self)
	var reply upgradeReply
	if err := askControl(minor, "upgrade", self, &reply); err != nil {
		return UpgradeResult{}, err
	}
	// A holder of the build before says it is busy in words only.
	if reply.Busy || reply.Error == errHandoverUnderWay.Error() || reply.Error == errNotServedYet.Error() {
		return UpgradeResult{}, fmt.Errorf("%w: %s", errHandoverBusy, reply.Error)
	}
	if reply.Error != "" {
		return UpgradeResult{}, fmt.Errorf("hand %s over: %s", mnt, reply.Error)
	}
	return UpgradeResult{From: st.Version, To: reply.Version, Daemon: reply.Daemon}, nil
}

// askControl sends ask (and fd, when not -1) to the holder of connection minor and decodes its answer.
func askControl(minor uint32, ask string, fd int, out any) error {
	path := controlSocket(minor)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ECONNREFUSED) {
		return ErrNoHolder
	}
	if err != nil {
		return fmt.Errorf("reach the mount's holder at %s: %w", path, err)
	}
	defer c.Close()
	// The holder runs as this user: a socket another user made there first (a normal user's folder is in /tmp
	// without XDG_RUNTIME_DIR) is sent neither a binary nor believed.
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		return fmt.Errorf("%s is not a holder of this user's (it answers as uid %d): remove it and its folder, which another user made", path, uid)
	}
	req, _ := json.Marshal(controlRequest{Ask: ask})
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if _, _, err := c.WriteMsgUnix(req, oob, nil); err != nil {
		return fmt.Errorf("ask the mount's holder: %w (%w)", err, errNoAnswer)
	}
	_ = c.SetReadDeadline(time.Now().Add(upgradeTimeout))
	if err := json.NewDecoder(c).Decode(out); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, unix.ECONNRESET) {
			err = fmt.Errorf("%w (%w)", err, errNoAnswer)
		}
		return fmt.Errorf("the mount's holder did not answer %q: %w (its log says why)", ask, err)
	}
	return nil
}

// sameFolder says whether a and b name the same folder.
func sameFolder(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}
