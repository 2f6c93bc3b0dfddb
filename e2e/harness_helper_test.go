package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// The test binary doubles as a helper process, so tests can run many real writer processes. A helper is chosen
// by SESSIONFS_E2E_HELPER and never returns to the tests.
func init() {
	switch os.Getenv("SESSIONFS_E2E_HELPER") {
	case "":
		return
	case "append":
		os.Exit(helperAppend())
	case "stress":
		os.Exit(helperStress())
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
