package takeover

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sessionfs/sessionfs/internal/selfexec"
	"github.com/sessionfs/sessionfs/mount/inspect"
	"github.com/sessionfs/sessionfs/mount/takeover/nodelog"
)

// A holder moved to another pid namespace (the CSI plugin's DaemonSet update): the plugin's pod before
// holds the node's mount, and its pid namespace ends with it, so an upgrade by exec (holder_exec.go) cannot serve:
// the new pod's plugin cannot run anything in the old pod. Instead it asks the old holder, over the control
// socket both pods see (a hostPath folder, root's alone), for everything it holds:
//
//  1. the asker checks the holder's state (its hand-over format and node-log version) and refuses one it does not
//     read, before anything stops: the old holder serves on; the holder checks the asker's again;
//  2. the holder tells its daemon to hand over (as an upgrade does), and once the daemon is gone sends the asker the
//     /dev/fuse descriptor, the node log and the lock owners' descriptors (SCM_RIGHTS) with its configuration and
//     the kernel's INIT, having closed its binds and its control socket;
//  3. the asker says "taken"; the old holder answers "gone" and exits without aborting anything: from "gone" on it
//     never serves again. One that hears no "taken" in time says so and serves on, with a daemon of its own, and
//     the asker then starts nothing: at most one of the two ever starts a daemon (two would serve one
//     connection). One that ended after it sent all (its pod killed) says nothing: the asker goes on;
//  4. the asker, once it heard "gone", starts a helper of its own with what it got, as an upgraded holder (the
//     same code: holder_exec.go's upgraded), which starts its own confined daemon that takes the connection over
//     (FUSE_NOTIFY_RESEND): the connection lives on in the new holder.

// moveRequest asks a holder to move to the asker: what it reads.
type moveRequest struct {
	Ask     string // "move"
	Format  string // the asker's handoverFormat
	NodeLog uint32 // and node-log version
}

// movedState is what a holder hands a holder in another pid namespace, beside the connection and the node log
// (the descriptors of its first message) and the lock owners' descriptors (sent after it, lockChunk a message, in
// the order of Locks).
type movedState struct {
	Version string
	Config  Config
	Init    fuse.InitIn
	Locks   []heldOwner // their FD the old holder's own: the new one numbers them anew
	Held    Held        // the old holder's state: its takeovers go on counting
}

// lockChunk is how many lock owners' descriptors go in one message (the kernel takes at most 253).
const lockChunk = 200

// moveTaken is the asker's word that it has what was handed over; moveGone the old holder's that it lets go.
const (
	moveTaken = "taken\n"
	moveGone  = "gone\n"
)

// moveAckTimeout bounds each side's wait for the other's word.
const moveAckTimeout = 10 * time.Second

// beginMove keeps the asker's socket c, checks it reads this holder's state, and tells the serving daemon to hand
// over: once it is gone, takeOver's execUpgrade moves what this holder holds (moveOut).
func (h *Holder) beginMove(raw []byte, c *net.UnixConn) error {
	// Only a root mount's holder moves (the CSI plugin's, to its next pod): a normal user's would hand the mount's
	// connection to any process of that user, a session's own among them (an upgrade at least runs a binary).
	if os.Geteuid() != 0 {
		return errors.New("only a root mount's holder moves to another pid namespace: sessionfs mount upgrades this one")
	}
	var req moveRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return err
	}
	if req.Format != handoverFormat || req.NodeLog != nodelog.Version {
		return fmt.Errorf("this holder's state (format %s, node log %d) is not the asker's (format %s, node log %d): it serves on",
			handoverFormat, nodelog.Version, req.Format, req.NodeLog)
	}
	return h.awaitHandover(&pendingUpgrade{exe: -1, move: true}, c)
}

// moveOut sends what this holder holds to the asker and exits once it says it took it; it returns only when the
// move failed (the asker is told, and this holder serves on: takeOver starts its own daemon).
func (h *Holder) moveOut(u *pendingUpgrade) {
	defer u.reply.Close()
	err := h.sendHeld(u.reply)
	if err == nil {
		fmt.Fprintf(os.Stderr, "sessionfs: %s is held by a holder in another pid namespace now (the next plugin's): this one lets go\n", h.cfg.Mountpoint)
		os.Exit(0) // the connection is not aborted: the new holder keeps it
	}
	h.endUpgrade()
	fmt.Fprintf(os.Stderr, "sessionfs: the move of %s to another holder failed: %v; this one serves on\n", h.cfg.Mountpoint, err)
	_ = json.NewEncoder(u.reply).Encode(upgradeReply{Error: err.Error() + " (the holder before serves on)"})
	h.listenControlOnce()
}

// sendHeld sends the connection, the node log, the configuration and the INIT over reply, waits for "taken" and
// says "gone": nil means this holder must not serve again.
func (h *Holder) sendHeld(reply *os.File) error {
	init, err := h.keptInit()
	if err != nil {
		return err
	}
	locks := h.locks.held()
	state, err := json.Marshal(movedState{Version: Version, Config: h.cfg, Init: *init, Locks: locks, Held: h.held()})
	if err != nil {
		return err
	}
	// The binds are this process's and go with it, as at an upgrade; the control socket's path is the next
	// holder's to listen on, so it is removed before that one may.
	h.host.ReleaseBinds()
	h.closeControl()
	fc, err := net.FileConn(reply)
	if err != nil {
		return err
	}
	defer fc.Close()
	c := fc.(*net.UnixConn)
	if err := sendMoved(c, state, DevFD, NodesFD, locks); err != nil {
		return err
	}
	if err := expectWord(c, moveTaken); err != nil {
		return fmt.Errorf("the asker did not say it took the mount: %w", err)
	}
	if _, err := c.Write([]byte(moveGone)); err != nil {
		fmt.Fprintf(os.Stderr, "sessionfs: tell the next holder of %s this one is gone: %v\n", h.cfg.Mountpoint, err)
	}
	return nil
}

// sendMoved writes the state and the descriptors as receiveHeld reads them: the state's length first (a stream
// socket may cut it anywhere, the asker reads it whole) with the connection and the node log, then the lock owners'
// descriptors, lockChunk a message.
func sendMoved(c *net.UnixConn, state []byte, dev, nodes int, locks []heldOwner) error {
	msg := binary.LittleEndian.AppendUint32(nil, uint32(len(state)))
	if _, _, err := c.WriteMsgUnix(append(msg, state...), unix.UnixRights(dev, nodes), nil); err != nil {
		return fmt.Errorf("send what is held: %w", err)
	}
	for i := 0; i < len(locks); i += lockChunk {
		fds := make([]int, 0, lockChunk)
		for _, o := range locks[i:min(i+lockChunk, len(locks))] {
			fds = append(fds, o.FD)
		}
		if _, _, err := c.WriteMsgUnix([]byte{'L'}, unix.UnixRights(fds...), nil); err != nil {
			return fmt.Errorf("send the lock owners' descriptors: %w", err)
		}
	}
	return nil
}

// expectWord reads word from c, within moveAckTimeout.
func expectWord(c *net.UnixConn, word string) error {
	_ = c.SetReadDeadline(time.Now().Add(moveAckTimeout))
	buf := make([]byte, len(word))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != word {
		return fmt.Errorf("%q, not %q", buf, word)
	}
	return nil
}

// holderEnded says whether err, reading the word of a holder moving, means it closed its end with nothing said:
// an end (io.EOF), or ECONNRESET when it closed with "taken" unread (killed before it read it).
func holderEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, unix.ECONNRESET)
}

// MovedHolder is a holder this process started with what a holder in another pid namespace handed it.
type MovedHolder struct {
	Cmd      *exec.Cmd // the helper, this process's child: the caller reaps it
	From, To string    // the versions before and after
	Daemon   int       // the daemon that serves now
}

// TakeHolder asks the holder of the mount at mnt (of the store at storeRoot), which runs in another pid namespace,
// to hand this process all it holds, and starts a helper with it by start (which may shrink its bounding set).
// ErrNoHolder: nothing keeps the mount's connection. An incompatible state is refused before anything stops: the
// holder before serves on.
// While another hand-over is under way, or the daemon of the last one has served less than handoverSpacing, it
// waits (up to handoverWait), as Upgrade does.
func TakeHolder(storeRoot, mnt string, start func(*exec.Cmd) error) (*MovedHolder, error) {
	mnt, err := filepath.Abs(mnt)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(handoverWait)
	for {
		h, err := takeHolderOnce(storeRoot, mnt, start)
		if !errors.Is(err, errHandoverBusy) || time.Now().After(deadline) {
			return h, err
		}
		time.Sleep(handoverPoll)
	}
}

// takeHolderOnce asks the holder of mnt once: errHandoverBusy while it is in a hand-over.
func takeHolderOnce(storeRoot, mnt string, start func(*exec.Cmd) error) (*MovedHolder, error) {
	minor, ok := inspect.Connection(mnt)
	if !ok {
		return nil, ErrNoHolder
	}
	var st holderState
	if err := askControl(minor, "state", -1, &st); err != nil {
		return nil, err
	}
	if !sameFolder(st.Store, storeRoot) {
		return nil, fmt.Errorf("%s serves the store %s, not %s", mnt, st.Store, storeRoot)
	}
	if st.Format != handoverFormat || st.NodeLog != nodelog.Version {
		return nil, fmt.Errorf("%s is held by sessionfs %s, whose state (format %s, node log %d) this build (%s: format %s, node log %d) does not read: it serves on",
			mnt, st.Version, st.Format, st.NodeLog, Version, handoverFormat, nodelog.Version)
	}
	c, err := dialHolder(minor)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	req, _ := json.Marshal(moveRequest{Ask: "move", Format: handoverFormat, NodeLog: nodelog.Version})
	if _, err := c.Write(req); err != nil {
		return nil, fmt.Errorf("ask the mount's holder: %w", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(upgradeTimeout))
	moved, fds, err := receiveHeld(c)
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "sessionfs-held")
	}
	defer func() {
		for _, f := range files { // the helper has its copies: this process must not hold the connection
			f.Close()
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("hand %s over: %w", mnt, err)
	}
	if len(moved.Config.Takeover) == 0 {
		return nil, errors.New("the holder handed over no mount options")
	}
	// This process's names for the store and the mount (the same folders: checked above).
	moved.Config.Store, moved.Config.Mountpoint = storeRoot, mnt
	// A holder that ended meanwhile cannot be told: what is read next says so (holderEnded).
	_, _ = c.Write([]byte(moveTaken))
	if err := expectWord(c, moveGone); holderEnded(err) {
		// Closed with nothing said: the holder ended after it sent all (its pod killed). One that serves on says so
		// first (moveOut), so this process is the only one to hold the connection now: it goes on.
		fmt.Fprintf(os.Stderr, "sessionfs: the holder of %s ended during the hand-over: this one holds the mount\n", mnt)
	} else if err != nil {
		return nil, fmt.Errorf("the holder of %s did not say it let go: %w (it serves on)", mnt, err)
	}
	helper, served, err := startMovedHelper(moved, files, start)
	if err != nil {
		return nil, fmt.Errorf("%w: nothing holds %s now, its users get errors (sessionfs mount serves it again)", err, mnt)
	}
	defer served.Close()
	_ = served.SetReadDeadline(time.Now().Add(upgradeTimeout))
	var reply upgradeReply
	if err := json.NewDecoder(served).Decode(&reply); err != nil {
		return &MovedHolder{Cmd: helper, From: moved.Version}, fmt.Errorf("the new holder did not say a daemon serves %s: %w (its log says why)", mnt, err)
	}
	if reply.Error != "" {
		return &MovedHolder{Cmd: helper, From: moved.Version}, fmt.Errorf("no daemon serves %s: %s", mnt, reply.Error)
	}
	return &MovedHolder{Cmd: helper, From: moved.Version, To: reply.Version, Daemon: reply.Daemon}, nil
}

// receiveHeld reads what a holder moving sends (sendHeld): the state, and the descriptors: the connection, the node
// log, then the lock owners'. A holder that cannot move answers an upgradeReply instead.
func receiveHeld(c *net.UnixConn) (movedState, []int, error) {
	var moved movedState
	var fds []int
	// read reads exactly len(b) bytes, keeping the descriptors that come with them.
	read := func(b []byte, most int) error {
		oob := make([]byte, unix.CmsgSpace(most*4))
		for got := 0; got < len(b); {
			n, oobn, _, _, err := c.ReadMsgUnix(b[got:], oob)
			fds = append(fds, selfexec.ReceivedFDs(oob[:oobn])...)
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrUnexpectedEOF
			}
			got += n
		}
		return nil
	}
	head := make([]byte, 4)
	if err := read(head, 2); err != nil {
		return moved, fds, fmt.Errorf("the holder did not hand it over: %w (its log says why)", err)
	}
	if len(fds) != 2 { // not a move: the holder's answer, in JSON
		var r upgradeReply
		rest := make([]byte, 4096)
		n, _ := c.Read(rest)
		if json.Unmarshal(append(head, rest[:n]...), &r) == nil && r.Error != "" {
			if r.Busy || r.Error == errHandoverUnderWay.Error() || r.Error == errNotServedYet.Error() { // a build before: in words
				return moved, fds, fmt.Errorf("%w: %s", errHandoverBusy, r.Error)
			}
			return moved, fds, errors.New(r.Error)
		}
		return moved, fds, fmt.Errorf("the holder sent %d descriptors, not the connection and the node log", len(fds))
	}
	size := binary.LittleEndian.Uint32(head)
	if size > 64<<20 {
		return moved, fds, fmt.Errorf("the holder's state is %d bytes", size)
	}
	state := make([]byte, size)
	if err := read(state, 2); err != nil {
		return moved, fds, fmt.Errorf("read what the holder handed over: %w", err)
	}
	if err := json.Unmarshal(state, &moved); err != nil {
		return moved, fds, fmt.Errorf("read what the holder handed over: %w", err)
	}
	if len(fds) != 2 || len(moved.Locks) > maxHeldLockOwners {
		return moved, fds, fmt.Errorf("the holder sent %d descriptors and %d lock owners", len(fds), len(moved.Locks))
	}
	for len(fds) < 2+len(moved.Locks) {
		if err := read(make([]byte, 1), lockChunk); err != nil {
			return moved, fds, fmt.Errorf("read the lock owners' descriptors: %w", err)
		}
	}
	if len(fds) != 2+len(moved.Locks) {
		return moved, fds, fmt.Errorf("the holder sent %d lock owners' descriptors for %d owners", len(fds)-2, len(moved.Locks))
	}
	return moved, fds, nil
}

// The descriptors of a helper started with what a holder moving handed over: after its 3 (its daemon's socket:
// none yet), DevFD, NodesFD and LocksFD (an upgraded holder reads no daemon's there), the socket it
// says on once a daemon serves, then the lock owners'.
const (
	movedReplyFD = 7
	movedLocksFD = 8
)

// startMovedHelper starts this binary as a helper holding the connection, the node log and the lock owners (fds,
// in this order), as a holder re-executed at an upgrade is (upgraded): it says on served once a daemon of its
// serves.
func startMovedHelper(moved movedState, held []*os.File, start func(*exec.Cmd) error) (*exec.Cmd, *net.UnixConn, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "sessionfs-served"), os.NewFile(uintptr(pair[1]), "sessionfs-upgrade")
	defer theirs.Close()
	cfg, err := json.Marshal(moved.Config)
	if err != nil {
		ours.Close()
		return nil, nil, err
	}
	locks := make([]heldOwner, len(moved.Locks))
	for i, o := range moved.Locks {
		locks[i] = heldOwner{Owner: o.Owner, FD: movedLocksFD + i}
	}
	st := upgradedState{Init: moved.Init, Reply: movedReplyFD, Held: moved.Held}
	locksFile, err := st.carryLocks(locks)
	if err != nil {
		ours.Close()
		return nil, nil, err
	}
	extra := held[2:]
	if locksFile != nil { // the helper's descriptor after the owners'
		defer locksFile.Close()
		st.LocksFile, extra = movedLocksFD+len(locks), append(extra[:len(extra):len(extra)], locksFile)
	}
	state, err := json.Marshal(st)
	if err != nil {
		ours.Close()
		return nil, nil, err
	}
	cmd := exec.Command("/proc/self/exe", selfexec.Helper, moved.Config.Mountpoint)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), selfexec.HelperEnv+"="+string(cfg), upgradeEnv+"="+string(state))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = append([]*os.File{nil, held[0], held[1], nil, theirs}, extra...)
	if err := start(cmd); err != nil {
		ours.Close()
		return nil, nil, fmt.Errorf("start the holder: %w", err)
	}
	conn, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return cmd, nil, err
	}
	return cmd, conn.(*net.UnixConn), nil
}

// dialHolder connects to the control socket of connection minor's holder, root's (or this user's) alone.
func dialHolder(minor uint32) (*net.UnixConn, error) {
	path := controlSocket(minor)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ECONNREFUSED) {
		return nil, ErrNoHolder
	}
	if err != nil {
		return nil, fmt.Errorf("reach the mount's holder at %s: %w", path, err)
	}
	if uid, err := peerUID(c); err != nil || uid != os.Geteuid() {
		c.Close()
		return nil, fmt.Errorf("%s is not a holder of this user's (it answers as uid %d): remove it", path, uid)
	}
	return c, nil
}

// HeldHere says whether a process of this pid namespace (the ones /proc shows) holds the FUSE connection of the
// mount at mnt: false once a holder in another namespace took it over (or nothing holds it).
func HeldHere(mnt string) bool {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType != inspect.FSType {
		return false
	}
	want := int64(inspect.KernelDev(uint32(mounts[len(mounts)-1].Major), uint32(mounts[len(mounts)-1].Minor)))
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		conns, _ := inspect.FUSEConnections(pid)
		for _, c := range conns {
			if c == want {
				return true
			}
		}
	}
	return false
}

// ControlDir is the folder of this user's mounts' control sockets (root's: /run/sessionfs), which a holder moving
// to another pid namespace is asked through: in a pod, a hostPath the next pod sees.
func ControlDir() string { return controlDir() }
