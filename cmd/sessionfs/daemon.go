package main

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/sessionfs/sessionfs/confine"
	"github.com/sessionfs/sessionfs/mount"
)

// mount --daemon runs the mount in a detached copy of this program (its own session, output to a log file) and
// returns once the mount serves, printing the daemon's pid; a mount that fails returns its error instead. The
// copy says it is ready on the pipe named by readyFdEnv.
const readyFdEnv = "SESSIONFS_READY_FD"

// daemonReadyTimeout bounds the wait for the detached mount to come up.
const daemonReadyTimeout = 60 * time.Second

// defaultMountLog is the log of the daemon serving the store at root, one per store so two daemons never
// interleave theirs: $XDG_STATE_HOME/sessionfs/mount.log (~/.local/state/sessionfs/mount.log) for the default
// store, mount-<folder>-<hash of its path>.log beside it for another.
func defaultMountLog(root string) string {
	name := "mount.log"
	if !isDefaultStore(root) {
		sum := sha256.Sum256([]byte(root))
		name = fmt.Sprintf("mount-%s-%x.log", logWord(filepath.Base(root)), sum[:4])
	}
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "sessionfs-" + name
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "sessionfs", name)
}

// logWord is a store folder's name as a log file's name may hold it: letters, digits, '.', '_' and '-', at most 32.
func logWord(name string) string {
	w := strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-') {
			return r
		}
		return '_'
	}, name)
	if len(w) > 32 {
		w = w[:32]
	}
	return w
}

// daemonize starts this command again without --daemon, detached, and waits until it serves at mnt.
func daemonize(out, errOut io.Writer, mnt, logPath string, co confine.Options) error {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("mount --daemon: the log: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mount --daemon: the log: %w", err)
	}
	defer logf.Close()
	start, _ := logf.Seek(0, io.SeekEnd)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	self, err := os.Executable()
	if err != nil {
		w.Close()
		return err
	}
	var args []string
	for _, a := range os.Args[1:] {
		if a != "--daemon" && !strings.HasPrefix(a, "--daemon=") {
			args = append(args, a)
		}
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), readyFdEnv+"=3")
	cmd.Stdout, cmd.Stderr, cmd.ExtraFiles = logf, logf, []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := confine.StartDaemon(cmd, co); err != nil {
		w.Close()
		return fmt.Errorf("mount --daemon: %w", err)
	}
	w.Close() // the child holds the only write end: EOF means it ended without serving
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		ready <- line == "ready\n"
	}()
	select {
	case ok := <-ready:
		if ok {
			pid := cmd.Process.Pid
			_ = cmd.Process.Release()
			fmt.Fprintln(out, pid)
			fmt.Fprintf(errOut, "sessionfs: the mount runs in the background (pid %d; log %s; %s to stop it)\n", pid, logPath, unmountCommand(mnt))
			return nil
		}
	case <-time.After(daemonReadyTimeout):
		_ = cmd.Process.Kill()
	}
	_ = cmd.Wait()
	return fmt.Errorf("mount --daemon: the mount did not come up: %s", lastLogLine(logPath, start))
}

// lastLogLine is the last line the daemon logged since offset from, with the "sessionfs: " prefix dropped.
func lastLogLine(path string, from int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "see " + path
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return "see " + path
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	if stamp, rest, ok := strings.Cut(last, " "); ok {
		if _, err := time.Parse(time.RFC3339, stamp); err == nil {
			last = rest
		}
	}
	last = strings.TrimPrefix(last, "sessionfs: ")
	if last == "" {
		return "see " + path
	}
	return last
}

// tellReady tells the process that ran mount --daemon that the mount serves (nothing when not started so), once
// what the daemon logged so far is in its log file.
func tellReady() error {
	if os.Getenv(readyFdEnv) != "3" {
		return nil
	}
	syncDaemonLog()
	f := os.NewFile(3, "ready")
	if f == nil {
		return errors.New("no ready pipe")
	}
	defer f.Close()
	_, err := f.WriteString("ready\n")
	return err
}

// inDaemon reports whether this process is the detached copy mount --daemon started.
func inDaemon() bool { return os.Getenv(readyFdEnv) == "3" }

// unmountCommand is the command that stops the mount at mnt: named, since a bare "sessionfs unmount" stops the
// default mountpoint's, which may be another.
func unmountCommand(mnt string) string {
	if abs, err := filepath.Abs(mnt); err == nil {
		mnt = abs
	}
	if strings.ContainsAny(mnt, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		mnt = shellQuote(mnt)
	}
	return "sessionfs unmount " + mnt
}

// stopHint says how to stop the mount at mnt: Ctrl-C at a terminal; in a daemon's log, the command.
func stopHint(mnt string) string {
	if inDaemon() {
		return unmountCommand(mnt) + " to stop it"
	}
	return "Ctrl-C to unmount"
}

// syncDaemonLog returns once what was written to os.Stderr before it is in the daemon's log file (at most 2 s).
var syncDaemonLog = func() {}

// logSyncMark, written to the log's pipe, is answered by its writer once the lines before it are written, and
// written itself nowhere.
const logSyncMark = "\x00sessionfs-log-sync\n"

// logDaemonWithTimes makes the daemon's log lines (what this program writes to os.Stderr) begin with the time,
// as a log read days later needs; it returns the function that flushes them and puts os.Stderr back. Outside a
// daemon it does nothing. A crash's trace, written to the log file itself, is kept whole.
func logDaemonWithTimes() (stop func()) {
	if !inDaemon() {
		return func() {}
	}
	logf := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	os.Stderr = w
	mount.DaemonLog = logf // a mount's holder outlives this process, and this pipe
	// Libraries log through the standard logger (go-fuse: "Failed to read from fuse conn"), which holds the
	// stderr it began with: it writes to the pipe too, its own date left out.
	prevOut, prevFlags := log.Writer(), log.Flags()
	log.SetOutput(w)
	log.SetFlags(0)
	done := make(chan struct{})
	synced := make(chan struct{}, 1)
	syncDaemonLog = func() {
		if _, err := io.WriteString(w, logSyncMark); err == nil {
			select {
			case <-synced:
			case <-time.After(2 * time.Second):
			}
		}
	}
	go func() {
		defer close(done)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			line, sync := strings.CutSuffix(line, logSyncMark) // after a line of its own or a part of one
			if line != "" {
				fmt.Fprintf(logf, "%s %s", time.Now().Format(time.RFC3339), line)
				if !strings.HasSuffix(line, "\n") {
					fmt.Fprintln(logf)
				}
			}
			if sync {
				select {
				case synced <- struct{}{}:
				default: // one is waiting to be taken already
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return func() {
		syncDaemonLog = func() {}
		os.Stderr = logf
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
		w.Close()
		select {
		case <-done: // all written
		case <-time.After(2 * time.Second): // a process it started holds the pipe still
		}
	}
}
