package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/travel"
)

// exportOptions are export's flags.
type exportOptions struct {
	out             string
	withCredentials bool
	force           bool
}

func (a *app) exportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export ID [-o FILE|-]",
		Short: "Write a session to one archive (zstd-compressed tar) to move it to another machine",
		Long: `export writes the whole session (session.json, app/, workspace/, mcps/, every agent's config folder with
its transcripts) to one zstd-compressed tar: modes, modification times, symlinks, hard links and user.* extended
attributes are kept. "sessionfs import --archive FILE" restores it, on this machine or another. With no -o,
the archive goes to stdout when stdout is not a terminal (export ID > FILE, or a pipe), else to ID.tar.zst; what
was written is said on stderr.

Credentials found in known places (.claude/.credentials.json, .codex/auth.json, ~/.ssh keys, .netrc, ...)
are listed and left out unless --with-credentials. FIFOs, sockets, devices and symlinks leading out of the
session are left out and named. A conversation being written (any JSONL of an agent's folder) is packed up to
its last whole line.`,
		Example: `  sessionfs export fix-login                       # writes fix-login.tar.zst
  sessionfs export fix-login > /backup/fix-login.tar.zst
  sessionfs export fix-login -o - | ssh host2 sessionfs import --archive -
  sessionfs export fix-login -o /backup/fix-login.tar.zst --with-credentials`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				o.out = defaultArchive(args[0], term.IsTerminal(int(os.Stdout.Fd())))
			}
			return a.runExport(cmd.OutOrStdout(), args[0], o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.out, "output", "o", "", "the archive to write, - for stdout (default: stdout when it is not a terminal, else ID.tar.zst)")
	f.BoolVar(&o.withCredentials, "with-credentials", false, "pack the credentials found too")
	f.BoolVar(&o.force, "force", false, "replace FILE if it exists")
	return cmd
}

// defaultArchive is where export writes with no -o: stdout ("-") when it is redirected or piped, as a person
// typing "export ID > FILE" means, else ID.tar.zst.
func defaultArchive(id string, stdoutIsTerminal bool) string {
	if stdoutIsTerminal {
		return id + ".tar.zst"
	}
	return "-"
}

// runExport writes session id to the archive o names (stdout is w), and says what it wrote on stderr: stdout may
// be the archive.
func (a *app) runExport(w io.Writer, id string, o exportOptions) error {
	s, _, err := a.session(id)
	if err != nil {
		return err
	}
	out, err := createArchive(w, o.out, o.force)
	if err != nil {
		return err
	}
	defer out.discard()
	ctx, stop := interruptible()
	defer stop()
	bar := newBar("exporting")
	start := time.Now()
	rep, err := travel.Export(ctx, s, id, out.w, travel.ExportOptions{WithCredentials: o.withCredentials, Output: out.f,
		Progress: func(done, total travel.Counts) {
			bar.update(done, total.Bytes, total.Files)
		}})
	bar.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("export %s: interrupted; no archive was written", id)
	}
	if err != nil {
		return err
	}
	warnLeftOut(rep, o.withCredentials)
	size, err := out.commit()
	if err != nil {
		return err
	}
	dest := o.out
	if dest == "-" {
		dest = "stdout"
	}
	msg := fmt.Sprintf("exported %s: %s, %s in %s -> %s%s", id, entries(rep.Files),
		humanize.IBytes(uint64(rep.Bytes)), time.Since(start).Round(time.Millisecond), dest, size)
	fmt.Fprintln(os.Stderr, "sessionfs: "+msg)
	return nil
}

// warnLeftOut names on stderr the credentials an export found (packed only withCredentials) and what it left out.
func warnLeftOut(rep *travel.ExportReport, withCredentials bool) {
	for _, c := range rep.Credentials {
		if withCredentials {
			warnf("packed the credential %s", c)
		} else {
			warnf("left out the credential %s (--with-credentials packs it)", c)
		}
	}
	for _, sk := range rep.Skipped {
		warnf("left out %s", oneLine(sk))
	}
}

// archiveOut is where an export goes: stdout, or a file written beside its name and renamed to it once whole, so
// a failed export leaves no half archive.
type archiveOut struct {
	w    io.Writer
	f    *os.File // the file being written; nil for stdout
	name string   // the archive's name, - for stdout
}

// createArchive opens the archive name for writing (- for stdout, which is refused when a terminal); an existing
// file is replaced only when force.
func createArchive(stdout io.Writer, name string, force bool) (*archiveOut, error) {
	if name == "-" {
		if term.IsTerminal(int(os.Stdout.Fd())) {
			return nil, usageError("export: will not write an archive to a terminal (redirect stdout, or -o FILE)")
		}
		return &archiveOut{w: stdout, name: name}, nil
	}
	if _, err := os.Lstat(name); err == nil && !force {
		return nil, fmt.Errorf("export: %s already exists (--force replaces it)", name)
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return &archiveOut{w: f, f: f, name: name}, nil
}

// commit syncs the archive and gives it its name; size is its size for a message (" (1.2 MiB)"), "" for stdout.
func (o *archiveOut) commit() (size string, err error) {
	if o.f == nil {
		return "", nil
	}
	if err := o.f.Sync(); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(o.f.Name(), o.name); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	if st, err := os.Stat(o.name); err == nil {
		size = " (" + humanize.IBytes(uint64(st.Size())) + ")"
	}
	return size, nil
}

// discard closes the file and removes it: a no-op for a file renamed by commit.
func (o *archiveOut) discard() {
	if o.f != nil {
		o.f.Close()
		os.Remove(o.f.Name()) // a no-op once renamed
	}
}
