package modaltest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The fake's sandboxes run the command on this host against a folder materialised from the mounted Volume: the
// mount path (/session) is mapped to that folder in the command's arguments, environment and working directory.
// When the command ends, what it changed is written back to the Volume, as Modal commits a sandbox's writes when
// it terminates.

type sandbox struct {
	mu       sync.Mutex
	out, err bytes.Buffer
	done     chan struct{}
	exit     int
	killed   bool
	timedOut bool
	pid      int // the command's process group, once started
}

func (s *Server) EnvironmentGetOrCreate(ctx context.Context, req *pb.EnvironmentGetOrCreateRequest) (*pb.EnvironmentGetOrCreateResponse, error) {
	settings := pb.EnvironmentSettings_builder{ImageBuilderVersion: "2025.06"}.Build()
	meta := pb.EnvironmentMetadata_builder{Name: "main", Settings: settings}.Build()
	return pb.EnvironmentGetOrCreateResponse_builder{EnvironmentId: "en-1", Metadata: meta}.Build(), nil
}

func (s *Server) AppGetOrCreate(ctx context.Context, req *pb.AppGetOrCreateRequest) (*pb.AppGetOrCreateResponse, error) {
	return pb.AppGetOrCreateResponse_builder{AppId: "ap-" + req.GetAppName()}.Build(), nil
}

func (s *Server) ImageGetOrCreate(ctx context.Context, req *pb.ImageGetOrCreateRequest) (*pb.ImageGetOrCreateResponse, error) {
	result := pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build()
	return pb.ImageGetOrCreateResponse_builder{ImageId: "im-1", Result: result}.Build(), nil
}

func (s *Server) SecretGetOrCreate(ctx context.Context, req *pb.SecretGetOrCreateRequest) (*pb.SecretGetOrCreateResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("st-%d", len(s.secrets)+1)
	s.secrets[id] = req.GetEnvDict()
	return pb.SecretGetOrCreateResponse_builder{SecretId: id}.Build(), nil
}

func (s *Server) SandboxCreate(ctx context.Context, req *pb.SandboxCreateRequest) (*pb.SandboxCreateResponse, error) {
	def := req.GetDefinition()
	s.mu.Lock()
	id := fmt.Sprintf("sb-%022d", len(s.sandboxes)+1) // the V1 id form the SDK recognises
	env := map[string]string{}
	for _, sid := range def.GetSecretIds() {
		for k, v := range s.secrets[sid] {
			env[k] = v
		}
	}
	var volID, mountPath string
	for _, m := range def.GetVolumeMounts() {
		volID, mountPath = m.GetVolumeId(), m.GetMountPath()
	}
	sb := &sandbox{done: make(chan struct{})}
	s.sandboxes[id] = sb
	s.mu.Unlock()
	dir, err := os.MkdirTemp("", "modaltest-sandbox-")
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	snapshot := s.materialise(volID, dir)
	mapPath := func(v string) string {
		if mountPath == "" {
			return v
		}
		return strings.ReplaceAll(v, mountPath, dir)
	}
	args := make([]string, len(def.GetEntrypointArgs()))
	for i, a := range def.GetEntrypointArgs() {
		args[i] = mapPath(a)
	}
	if len(args) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no command")
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = mapPath(def.GetWorkdir())
	cmd.Env = nil
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+mapPath(v))
	}
	cmd.Stdout, cmd.Stderr = &lockedWriter{&sb.mu, &sb.out}, &lockedWriter{&sb.mu, &sb.err}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so an end kills the command and its children
	ctl, err := s.syncShim(dir)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	cmd.Env = append(cmd.Env, "PATH="+filepath.Join(ctl, "bin")+":"+os.Getenv("PATH"))
	timeout := time.Duration(def.GetTimeoutSecs()) * time.Second
	s.mu.Lock()
	s.lastTimeout = timeout
	s.mu.Unlock()
	s.mu.Lock()
	delay, every := s.commitDelay, s.backgroundCommits
	s.mu.Unlock()
	go func() {
		defer os.RemoveAll(ctl)
		defer os.RemoveAll(dir)
		commit := func() { snapshot = s.writeBack(volID, dir, snapshot) }
		code := 0
		if err := cmd.Start(); err != nil {
			code = 127
		} else {
			sb.mu.Lock()
			sb.pid = cmd.Process.Pid
			killed := sb.killed // terminated before it started
			sb.mu.Unlock()
			if killed {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			var timer *time.Timer
			if timeout > 0 {
				timer = time.AfterFunc(timeout, func() {
					sb.mu.Lock()
					sb.timedOut = true
					sb.mu.Unlock()
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				})
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			poll := time.NewTicker(10 * time.Millisecond)
			last := time.Now()
		run:
			for {
				select {
				case err := <-exited:
					if err != nil {
						code = cmd.ProcessState.ExitCode()
						if code < 0 {
							code = 137
						}
					}
					break run
				case <-poll.C:
					// A sync of the mountpoint commits now; otherwise, background commits now and then.
					if _, err := os.Stat(filepath.Join(ctl, "commit")); err == nil {
						commit()
						os.Remove(filepath.Join(ctl, "commit"))
					} else if every > 0 && time.Since(last) >= every {
						commit()
						last = time.Now()
					}
				}
			}
			poll.Stop()
			if timer != nil {
				timer.Stop()
			}
		}
		sb.mu.Lock()
		sb.exit = code
		sb.mu.Unlock()
		// The sandbox has ended (Wait answers), and its last writes are committed later, as Modal does when it
		// tears the sandbox down: nothing promises they are visible when Wait returns.
		close(sb.done)
		time.Sleep(delay)
		commit()
		s.mu.Lock()
		s.committed++
		s.mu.Unlock()
	}()
	return pb.SandboxCreateResponse_builder{SandboxId: id}.Build(), nil
}

// syncShim makes a folder whose bin/sync, first on the command's PATH, commits the Volume when it is given the
// mountpoint (as sync on a v2 Volume's mountpoint does in a Modal sandbox), and returns once it is committed.
func (s *Server) syncShim(mount string) (string, error) {
	ctl, err := os.MkdirTemp("", "modaltest-ctl-")
	if err != nil {
		return "", err
	}
	q := func(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }
	script := "#!/bin/sh\nfor a in \"$@\"; do\n  case \"$a\" in " + q(mount) + "|" + q(mount+"/") + ")\n" +
		"    : > " + q(ctl+"/commit") + "\n    while [ -e " + q(ctl+"/commit") + " ]; do sleep 0.01; done;;\n  esac\ndone\n"
	if err := os.MkdirAll(filepath.Join(ctl, "bin"), 0o755); err != nil {
		return "", err
	}
	return ctl, os.WriteFile(filepath.Join(ctl, "bin", "sync"), []byte(script), 0o755)
}

// SetCommits sets when a sandbox's writes reach the Volume besides an explicit sync of the mountpoint: delay
// after the sandbox ends (Wait has answered by then), and every interval while it runs (0: never), as Volumes
// mounted with background commits do.
func (s *Server) SetCommits(delay, interval time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitDelay, s.backgroundCommits = delay, interval
}

// Committed counts the sandboxes whose final commit is done.
func (s *Server) Committed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// materialise makes a volume's tree under dir and returns it by path ("f<mode>:content", "d", "l:target"), to
// find what the run changed.
func (s *Server) materialise(volID, dir string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := map[string]string{}
	paths := make([]string, 0, len(s.files[volID]))
	for p := range s.files[volID] {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a folder before what it holds
	for _, p := range paths {
		f, target := s.files[volID][p], filepath.Join(dir, p)
		switch f.kind {
		case pb.FileEntry_DIRECTORY:
			_ = os.MkdirAll(target, 0o755)
			snap[p] = "d"
		case pb.FileEntry_SYMLINK:
			_ = os.Symlink(f.target, target)
			snap[p] = "l:" + f.target
		default:
			data := s.content(f)
			_ = os.WriteFile(target, data, fs.FileMode(f.mode|0o600))
			_ = os.Chmod(target, fs.FileMode(f.mode|0o600))
			snap[p] = fmt.Sprintf("f%o:", f.mode|0o600) + string(data)
		}
	}
	return snap
}

// writeBack commits what the run changed under dir since before into the volume, and returns what it committed.
func (s *Server) writeBack(volID, dir string, before map[string]string) map[string]string {
	s.mu.Lock()
	name := ""
	for n, id := range s.volumes {
		if id == volID {
			name = n
		}
	}
	s.mu.Unlock()
	if name == "" {
		return before
	}
	after := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			after[rel] = "d"
			if before[rel] != "d" {
				s.Mkdir(name, rel)
			}
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil
			}
			after[rel] = "l:" + target
			if before[rel] != after[rel] {
				s.Symlink(name, target, rel)
			}
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			info, ierr := d.Info()
			if err != nil || ierr != nil {
				return nil
			}
			mode := uint32(info.Mode().Perm())
			after[rel] = fmt.Sprintf("f%o:", mode) + string(data)
			if before[rel] != after[rel] {
				s.WriteMode(name, rel, data, mode)
			}
		}
		return nil
	})
	for rel := range before {
		if !hasKey(after, rel) {
			s.Remove(name, rel)
		}
	}
	return after
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func (s *Server) sandbox(id string) (*sandbox, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no sandbox %s", id)
	}
	return sb, nil
}

func (s *Server) SandboxGetTaskId(ctx context.Context, req *pb.SandboxGetTaskIdRequest) (*pb.SandboxGetTaskIdResponse, error) {
	if _, err := s.sandbox(req.GetSandboxId()); err != nil {
		return nil, err
	}
	task := "ta-" + req.GetSandboxId()
	return pb.SandboxGetTaskIdResponse_builder{TaskId: &task}.Build(), nil
}

func (s *Server) SandboxWait(ctx context.Context, req *pb.SandboxWaitRequest) (*pb.SandboxWaitResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	select {
	case <-sb.done:
	case <-time.After(time.Duration(req.GetTimeout() * float32(time.Second))):
		return pb.SandboxWaitResponse_builder{}.Build(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	st := pb.GenericResult_GENERIC_STATUS_SUCCESS
	switch {
	case sb.timedOut:
		st = pb.GenericResult_GENERIC_STATUS_TIMEOUT
	case sb.killed:
		st = pb.GenericResult_GENERIC_STATUS_TERMINATED
	case sb.exit != 0:
		st = pb.GenericResult_GENERIC_STATUS_FAILURE
	}
	return pb.SandboxWaitResponse_builder{Result: pb.GenericResult_builder{Status: st, Exitcode: int32(sb.exit)}.Build()}.Build(), nil
}

func (s *Server) SandboxTerminate(ctx context.Context, req *pb.SandboxTerminateRequest) (*pb.SandboxTerminateResponse, error) {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return nil, err
	}
	sb.mu.Lock()
	sb.killed = true
	if sb.pid != 0 {
		_ = syscall.Kill(-sb.pid, syscall.SIGKILL)
	}
	sb.mu.Unlock()
	<-sb.done
	return pb.SandboxTerminateResponse_builder{}.Build(), nil
}

// SandboxGetLogs streams a sandbox's stdout or stderr from lastEntryId on; the last batch carries EOF once the
// command has ended and everything was sent. Entry ids are byte offsets.
func (s *Server) SandboxGetLogs(req *pb.SandboxGetLogsRequest, stream grpc.ServerStreamingServer[pb.TaskLogsBatch]) error {
	sb, err := s.sandbox(req.GetSandboxId())
	if err != nil {
		return err
	}
	var off int
	fmt.Sscan(req.GetLastEntryId(), &off)
	deadline := time.Now().Add(time.Duration(req.GetTimeout() * float32(time.Second)))
	for {
		finished := false
		select {
		case <-sb.done:
			finished = true
		default:
		}
		sb.mu.Lock()
		buf := &sb.out
		if req.GetFileDescriptor() == pb.FileDescriptor_FILE_DESCRIPTOR_STDERR {
			buf = &sb.err
		}
		data := append([]byte(nil), buf.Bytes()[min(off, buf.Len()):]...)
		sb.mu.Unlock()
		if len(data) > 0 || finished {
			off += len(data)
			var items []*pb.TaskLogs
			if len(data) > 0 {
				items = append(items, pb.TaskLogs_builder{Data: string(data), FileDescriptor: req.GetFileDescriptor()}.Build())
			}
			batch := pb.TaskLogsBatch_builder{EntryId: fmt.Sprint(off), Items: items, Eof: finished}.Build()
			if err := stream.Send(batch); err != nil {
				return err
			}
			if finished {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-sb.done:
		case <-time.After(20 * time.Millisecond):
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}

// Sandboxes counts the sandboxes created.
func (s *Server) Sandboxes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sandboxes)
}

// LastTimeout is the lifetime the last sandbox was created with.
func (s *Server) LastTimeout() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastTimeout
}
