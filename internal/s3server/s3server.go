// Package s3server runs a real S3-compatible server for tests: versitygw (a Go module, built by make) over a
// temporary folder, on 127.0.0.1, stopped when the test ends.
package s3server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	Bucket = "sessions"
	Access = "sessionfs-test"
	Secret = "sessionfs-test-secret-key"
)

// Path finds versitygw: $SESSIONFS_VERSITYGW (make installs it), PATH, or $(go env GOPATH)/bin.
func Path() string {
	if p := os.Getenv("SESSIONFS_VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Start runs a real S3 server (versitygw over a temporary folder) for the test, makes Bucket in it and
// points the AWS_* environment at it. It returns the endpoint URL.
func Start(t testing.TB) string {
	t.Helper()
	bin := Path()
	if bin == "" {
		msg := "versitygw not found on PATH or in $(go env GOPATH)/bin; install it: " +
			"go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root := t.TempDir()
	var endpoint string
	// A free port can be taken between asking and listening: try a few.
	for try := 0; ; try++ {
		addr := FreeAddr(t)
		cmd := exec.Command(bin, "--access", Access, "--secret", Secret, "--port", addr, "--quiet", "posix", root)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop := func() {
			cmd.Process.Kill()
			<-exited
		}
		endpoint = "http://" + addr
		if waitUp(endpoint, exited) {
			t.Cleanup(stop)
			break
		}
		stop()
		if try == 4 {
			t.Fatalf("versitygw did not answer on %s: %s", addr, out.String())
		}
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", endpoint)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ACCESS_KEY_ID", Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", Secret)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	if err := Client(t).MakeBucket(context.Background(), Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("making bucket: %v", err)
	}
	return endpoint
}

// FreeAddr is a 127.0.0.1 address with a port nothing listens on just now.
func FreeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitUp waits until endpoint answers HTTP (any status), or the server exits, or 20 s pass.
func waitUp(endpoint string, exited <-chan struct{}) bool {
	c := &http.Client{Timeout: time.Second}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		select {
		case <-exited:
			return false
		default:
		}
		if r, err := c.Get(endpoint + "/"); err == nil {
			r.Body.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// Client is a plain client of the test server, to write what a hostile bucket holds.
func Client(t testing.TB) *minio.Client {
	t.Helper()
	ep := strings.TrimPrefix(os.Getenv("AWS_ENDPOINT_URL_S3"), "http://")
	mc, err := minio.New(ep, &minio.Options{
		Creds:        credentials.NewStaticV4(Access, Secret, ""),
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(fmt.Errorf("client: %w", err))
	}
	return mc
}
