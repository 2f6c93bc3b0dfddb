package testimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tarball writes a rootfs: each path once (the engine refuses a tarball that names one twice), folders before
// what they hold.
type tarball struct {
	tw   *tar.Writer
	seen map[string]bool
}

func (t *tarball) header(h *tar.Header) error {
	if t.seen[h.Name] {
		return nil
	}
	t.seen[h.Name] = true
	return t.tw.WriteHeader(h)
}

func (t *tarball) dir(name string, mode int64, uid int) error {
	return t.header(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid})
}

func (t *tarball) file(name string, mode int64, data []byte) error {
	if t.seen[name] {
		return nil
	}
	if err := t.header(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := t.tw.Write(data)
	return err
}

func (t *tarball) link(name, target string) error {
	return t.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target})
}

// parents adds the folders above name (relative to /), from the top.
func (t *tarball) parents(name string) error {
	var ps []string
	for d := filepath.Dir(name); d != "." && d != "/"; d = filepath.Dir(d) {
		ps = append([]string{d}, ps...)
	}
	for _, d := range ps {
		if err := t.dir(d, 0o755, 0); err != nil {
			return err
		}
	}
	return nil
}

// write writes the rootfs to tw and closes it.
func (r Rootfs) write(tw *tar.Writer) error {
	t := &tarball{tw: tw, seen: map[string]bool{}}
	for _, d := range []string{"bin", "etc", "root", "lib", "lib/x86_64-linux-gnu", "lib64", "usr", "usr/local", "usr/local/bin"} {
		if err := t.dir(d, 0o755, 0); err != nil {
			return err
		}
	}
	if err := t.dir("tmp", 0o1777, 0); err != nil {
		return err
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return err
	}
	if err := t.file("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	applets := []string{"sh", "ls", "cat", "echo", "touch", "mkdir", "pwd", "id", "env", "sleep", "rm", "wc", "true", "false", "test", "readlink", "stat",
		"uname", "grep", "sed"} // the last three: what the devcontainers CLI runs in a container
	for _, applet := range append(applets, r.Applets...) {
		if err := t.link("bin/"+applet, "busybox"); err != nil {
			return err
		}
	}
	home := "/tmp"
	if r.Home != "" {
		home = r.Home
		name := strings.TrimPrefix(home, "/")
		if err := t.parents(name); err != nil {
			return err
		}
		if err := t.dir(name, 0o755, 1000); err != nil {
			return err
		}
	}
	if err := t.file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:"+home+":/bin/sh\n")); err != nil {
		return err
	}
	if err := t.file("etc/group", 0o644, []byte("root:x:0:\nagent:x:1000:\n")); err != nil {
		return err
	}
	for _, p := range r.Files {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := t.parents(p[1:]); err != nil {
			return err
		}
		if err := t.file(p[1:], 0o755, data); err != nil {
			return err
		}
	}
	for _, root := range r.Trees {
		if err := t.tree(root); err != nil {
			return err
		}
	}
	for name, target := range r.Links {
		if err := t.parents(name[1:]); err != nil {
			return err
		}
		if err := t.link(name[1:], target); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tree adds the folder root of this machine, its parents and everything beneath it, links kept as links.
func (t *tarball) tree(root string) error {
	if !filepath.IsAbs(root) {
		return fmt.Errorf("%s: not an absolute path", root)
	}
	if err := t.parents(root[1:]); err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if d.Type()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		if !d.IsDir() && !d.Type().IsRegular() && link == "" {
			return nil // sockets, devices: nothing an image needs
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = p[1:]
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if t.seen[h.Name] {
			return nil
		}
		if err := t.header(h); err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(t.tw, f)
		return err
	})
}
