package modal

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"

	"github.com/sessionfs/sessionfs/layout"
)

// The run's script reports, in sessionfs's folder on the Volume, what the Volume's listing cannot say (it has no
// modes, and no symlink targets): its executable files, empty folders, and every symlink on the Volume, each a
// list of NUL-separated paths as find -print0 writes them (links: path, target, path, target...). Which links the
// run made is told by the manifest (the links pushed), never by timestamps: a link made in the clock tick the
// run started in has that tick's mtime, and a strict "newer than" would lose it.
const (
	reportExec  = reservedDir + "/exec"
	reportEmpty = reservedDir + "/empty"
	reportLinks = reservedDir + "/links"
	// reportStarted was the run's start mark, the reference of that timestamp test; older builds' runs left it.
	reportStarted = reservedDir + "/started"
	reportLimit   = 16 << 20
)

// reportScript is the end of the run's script: it writes the report (in a subshell, from the mountpoint $R), all
// or nothing: without find (or on any failure) there is no report, rather than one that says nothing is
// executable.
const reportScript = `(cd "$R" && P=./` + reservedDir + ` &&
  find . -path "$P" -prune -o -type f -perm -u+x -print0 > "$P/x.tmp" &&
  find . -path "$P" -prune -o -type d -empty -print0 > "$P/e.tmp" &&
  find . -path "$P" -prune -o -type l -exec sh -c 'for f do printf "%s\0%s\0" "$f" "$(readlink "$f")"; done' sh {} + > "$P/l.tmp" &&
  mv -f "$P/x.tmp" "$P/exec" && mv -f "$P/e.tmp" "$P/empty" && mv -f "$P/l.tmp" "$P/links"
) 2>/dev/null
`

// runReport is what a run reported; nil when no run did (a plain sync).
type runReport struct {
	exec  map[string]bool
	empty []string
	links map[string]string
}

// loadReport fetches the last run's report from the Volume, if there is one. Its paths are the sandbox's (hostile):
// only plain relative paths are kept.
func (s *Syncer) loadReport(ctx context.Context) (*runReport, error) {
	lists := map[string][]string{}
	for _, rel := range []string{reportExec, reportEmpty, reportLinks} {
		var b bytes.Buffer
		if err := s.fetch(ctx, rel, reportLimit, &b); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, err
		}
		lists[rel] = strings.Split(strings.TrimSuffix(b.String(), "\x00"), "\x00")
	}
	rr := &runReport{exec: map[string]bool{}, links: map[string]string{}}
	clean := func(p string) (string, bool) {
		p = strings.TrimPrefix(p, "./")
		return p, cleanRel(p) && p != reservedDir && !strings.HasPrefix(p, reservedDir+"/")
	}
	for _, p := range lists[reportExec] {
		if rel, ok := clean(p); ok {
			rr.exec[rel] = true
		}
	}
	for _, p := range lists[reportEmpty] {
		if rel, ok := clean(p); ok {
			rr.empty = append(rr.empty, rel)
		}
	}
	links := lists[reportLinks]
	for i := 0; i+1 < len(links); i += 2 {
		if rel, ok := clean(links[i]); ok && links[i+1] != "" {
			rr.links[rel] = links[i+1]
		}
	}
	return rr, nil
}

// dropReport removes the report once applied, so a later sync does not apply it again.
func (s *Syncer) dropReport(ctx context.Context) error {
	for _, rel := range []string{reportExec, reportEmpty, reportLinks, reportStarted} {
		_, err := s.cp.VolumeRemoveFile2(ctx, pb.VolumeRemoveFile2Request_builder{VolumeId: s.volumeID, Path: rel}.Build())
		if err != nil && !isNotFound(err) {
			return Explain(err, s.client.Config)
		}
	}
	return nil
}

// withExec gives mode the execute bits where it has read bits (exec), or takes them away.
func withExec(mode uint32, exec bool) uint32 {
	if exec {
		return mode | (mode&0o444)>>2
	}
	return mode &^ 0o111
}

// applyTree makes here the empty folders and symlinks the run made, where nothing is in their way (a local
// entry is never replaced by one), beneath d with no symlink followed; what cannot be made (a file or a symlink
// in the way) is left on the Volume only. A link the Volume holds as it was pushed (same path, same target) is
// not the run's: it is not made again here, so one removed here while the run ran stays removed. It records the
// links in m.
func applyTree(d *layout.Dir, m *Manifest, rr *runReport) error {
	uid, gid, err := d.Owner()
	if err != nil {
		return err
	}
	for _, rel := range rr.empty {
		if _, err := d.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
			_ = d.MkdirAll(rel, 0o755, uid, gid)
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(rr.links)) {
		if pushed, ok := m.Links[rel]; ok && pushed == rr.links[rel] {
			continue
		}
		if _, err := d.Lstat(rel); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if dir := path.Dir(rel); dir != "." && d.MkdirAll(dir, 0o755, uid, gid) != nil {
			continue
		}
		if d.Symlink(rr.links[rel], rel, uid, gid) == nil {
			m.Links[rel] = rr.links[rel]
		}
	}
	return nil
}

// chmodRegular sets the mode of the regular file rel beneath d (opened with no symlink followed).
func chmodRegular(d *layout.Dir, rel string, mode uint32) error {
	f, err := d.OpenRegular(rel, -1)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Chmod(os.FileMode(mode))
}
