package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// The test binary doubles as a helper process, so tests can run many real processes: writers, and attackers run
// as another uid. A helper is chosen by SESSIONFS_E2E_HELPER and never returns to the tests; each helper lives
// beside the test that runs it.
func init() {
	switch os.Getenv("SESSIONFS_E2E_HELPER") {
	case "":
		return
	case "append":
		os.Exit(helperAppend())
	case "stress":
		os.Exit(helperStress())
	case "exchange":
		os.Exit(helperExchange())
	case "churn":
		os.Exit(helperChurn())
	case "touch":
		os.Exit(helperTouch())
	case "relabel":
		os.Exit(helperRelabel())
	case "opens-fill":
		os.Exit(helperOpensFill())
	case "locks-read":
		os.Exit(helperLocksRead())
	case "locks-hold":
		os.Exit(helperLocksHold())
	case "locks-wait":
		os.Exit(helperLocksWait())
	case "locks-ranges":
		os.Exit(helperLocksRanges())
	case "dev-server":
		os.Exit(helperDevServer())
	case "fake-holder":
		os.Exit(helperFakeHolder())
	}
}

// The test binary doubles as the attacker inside the sandbox (copied into the session, which may run it), chosen
// by SESSIONFS_E2E_ATTACK.
func init() {
	switch os.Getenv("SESSIONFS_E2E_ATTACK") {
	case "":
		return
	case "connect":
		os.Exit(attackConnect())
	case "tiocsti":
		os.Exit(attackTIOCSTI())
	case "takeover":
		os.Exit(attackTakeover())
	case "takeover-child":
		os.Exit(attackTakeoverChild())
	case "tcsetpgrp":
		os.Exit(attackTcsetpgrp())
	case "socketpair":
		os.Exit(attackSocketpair())
	case "shell":
		os.Exit(fakeShell())
	case "thief":
		os.Exit(attackThief())
	case "thief-child":
		os.Exit(attackThiefChild())
	}
}

// The test binary doubles as a program in the sandbox, and as a wrapper that takes namespaces away, chosen by
// SESSIONFS_E2E_SANDBOX.
func init() {
	switch os.Getenv("SESSIONFS_E2E_SANDBOX") {
	case "":
		return
	case "pty":
		os.Exit(makePty())
	case "nons":
		os.Exit(withoutNamespaces())
	case "signals":
		os.Exit(reportSignals())
	}
}

// helperAppend appends N JSONL lines to PATH with O_APPEND, one write a line; with SYNC=1 it fsyncs each line
// and reports it on stdout once it is durable.
func helperAppend() int {
	path, writer := os.Getenv("HELPER_PATH"), os.Getenv("HELPER_WRITER")
	n, _ := strconv.Atoi(os.Getenv("HELPER_LINES"))
	sync := os.Getenv("HELPER_SYNC") == "1"
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; n == 0 || i < n; i++ {
		line, _ := json.Marshal(map[string]any{"writer": writer, "n": i, "pad": "0123456789abcdef0123456789abcdef"})
		if _, err := syscall.Write(fd, append(line, '\n')); err != nil {
			return 2
		}
		if sync {
			if err := syscall.Fsync(fd); err != nil {
				return 2
			}
			fmt.Println(i)
		}
	}
	return 0
}

// appender starts a helper process appending to path.
func appender(t *testing.T, path, writer string, lines int, sync bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SESSIONFS_E2E_HELPER=append", "HELPER_PATH="+path, "HELPER_WRITER="+writer,
		"HELPER_LINES="+strconv.Itoa(lines), "HELPER_SYNC="+map[bool]string{true: "1"}[sync])
	return cmd
}
