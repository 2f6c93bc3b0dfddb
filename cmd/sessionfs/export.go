package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sessionfs/sessionfs/layout"
	"github.com/sessionfs/sessionfs/travel"
)

func (a *app) exportCmd() *cobra.Command {
	var out string
	var withCreds, force bool
	cmd := &cobra.Command{
		Use:   "export ID [-o FILE|-]",
		Short: "Write a session to one archive (zstd-compressed tar) to move it to another machine",
		Long: `export writes the whole session (session.json, app/, workspace/, mcps/, every agent's config folder with
its transcripts) to one zstd-compressed tar: modes, modification times, symlinks, hard links and user.* extended
attributes are kept. "sessionfs import --archive FILE" restores it, on this machine or another.

Credentials found in known places (.claude/.credentials.json, .codex/auth.json, ~/.ssh keys, .netrc, ...)
are listed and left out unless --with-credentials. FIFOs, sockets, devices and symlinks leading out of the
session are left out and named. A conversation being written (any JSONL of an agent's folder) is packed up to
its last whole line.`,
		Example: `  sessionfs export fix-login                       # writes fix-login.tar.zst
  sessionfs export fix-login -o - | ssh host2 sessionfs import --archive -
  sessionfs export fix-login -o /backup/fix-login.tar.zst --with-credentials`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: a.completeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			s, _, err := a.session(id)
			if err != nil {
				return err
			}
			if out == "" {
				out = id + ".tar.zst"
			}
			var w io.Writer = cmd.OutOrStdout()
			var f *os.File
			if out == "-" {
				if term.IsTerminal(int(os.Stdout.Fd())) {
					return usageError("export: will not write an archive to a terminal (redirect stdout, or -o FILE)")
				}
			} else {
				if _, err := os.Lstat(out); err == nil && !force {
					return fmt.Errorf("export: %s already exists (--force replaces it)", out)
				}
				// Written beside its name and renamed at the end: a failed export leaves no half archive.
				if f, err = os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				defer func() {
					f.Close()
					os.Remove(f.Name()) // a no-op once renamed
				}()
				w = f
			}
			ctx, stop := interruptible()
			defer stop()
			bar := newBar("exporting")
			start := time.Now()
			rep, err := travel.Export(ctx, s, id, w, travel.ExportOptions{WithCredentials: withCreds, Output: f,
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
			for _, c := range rep.Credentials {
				if withCreds {
					warnf("packed the credential %s", c)
				} else {
					warnf("left out the credential %s (--with-credentials packs it)", c)
				}
			}
			for _, sk := range rep.Skipped {
				warnf("left out %s", oneLine(sk))
			}
			size := ""
			if f != nil {
				if err := f.Sync(); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if err := os.Rename(f.Name(), out); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if st, err := os.Stat(out); err == nil {
					size = " (" + humanize.IBytes(uint64(st.Size())) + ")"
				}
			}
			msg := fmt.Sprintf("exported %s: %s, %s in %s -> %s%s", id, entries(rep.Files),
				humanize.IBytes(uint64(rep.Bytes)), time.Since(start).Round(time.Millisecond), out, size)
			if out == "-" {
				fmt.Fprintln(os.Stderr, "sessionfs: "+msg)
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), msg)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "the archive to write, - for stdout (default ID.tar.zst)")
	f.BoolVar(&withCreds, "with-credentials", false, "pack the credentials found too")
	f.BoolVar(&force, "force", false, "replace FILE if it exists")
	return cmd
}

// importArchive is "import --archive FILE": a session restored from an export.
func (a *app) importArchive(cmd *cobra.Command, file string, opts travel.ImportOptions) error {
	s, err := a.createStore()
	if err != nil {
		return err
	}
	var r io.Reader = os.Stdin
	var total int64 = -1
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			total = st.Size()
		}
		r = f
	}
	// The bar follows the archive read (its size is known); the description counts what is restored.
	read := &countingReader{r: r}
	bar := newBar("importing")
	opts.Progress = func(done travel.Counts) { bar.updateRead(read.n, total, done) }
	ctx, stop := interruptible()
	defer stop()
	start := time.Now()
	id, done, err := travel.Import(ctx, s, read, opts)
	bar.finish()
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("import %s: interrupted; nothing was imported", file)
	}
	if err != nil {
		if errors.Is(err, travel.ErrRefused) {
			return fmt.Errorf("import %s: %w; nothing was imported", file, err)
		}
		if errors.Is(err, layout.ErrExists) {
			return fmt.Errorf("%w (--as NEW imports it under another id)", err)
		}
		return fmt.Errorf("import %s: %w", file, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "imported %s: %s, %s in %s\n", id, entries(done.Files),
		humanize.IBytes(uint64(done.Bytes)), time.Since(start).Round(time.Millisecond))
	return nil
}

// interruptible is a context that Ctrl-C or SIGTERM cancels: a long export, import or fork then stops between two
// entries and cleans up after itself.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// bar is a progress bar on stderr, only when stderr is a terminal (a no-op otherwise).
type bar struct {
	verb string
	pb   *progressbar.ProgressBar
}

func newBar(verb string) *bar {
	b := &bar{verb: verb}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		b.pb = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowBytes(true),
			progressbar.OptionSetDescription(verb), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
	}
	return b
}

// update shows done of total bytes, and files.
func (b *bar) update(done travel.Counts, totalBytes int64, totalFiles int) {
	if b.pb == nil {
		return
	}
	b.pb.ChangeMax64(totalBytes)
	b.pb.Describe(fmt.Sprintf("%s %d/%d files", b.verb, done.Files, totalFiles))
	_ = b.pb.Set64(done.Bytes)
}

// updateRead shows read of total archive bytes (-1: unknown), and what was restored.
func (b *bar) updateRead(read, total int64, done travel.Counts) {
	if b.pb == nil {
		return
	}
	b.pb.ChangeMax64(total)
	b.pb.Describe(fmt.Sprintf("%s %d files, %s", b.verb, done.Files, humanize.IBytes(uint64(done.Bytes))))
	_ = b.pb.Set64(read)
}

func (b *bar) finish() {
	if b.pb != nil {
		_ = b.pb.Finish()
	}
}
