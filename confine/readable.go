package confine

import (
	"io/fs"
	"os"
	"path/filepath"
)

// othersRead are the mode bits that let any user read a file (o+r) or list and enter a folder (o+rx).
const (
	othersReadFile = 0o004
	othersReadDir  = 0o005
)

// maxReadableEntries bounds the walk: /etc holds a few thousand entries; a folder beyond the bound is left out.
const maxReadableEntries = 20000

// ReadableByAll lists what beneath root any user of the host may read, as Landlock rules take it: a folder whose
// every file and folder beneath it others may read is one entry of dirs; a folder holding something they may not
// is listed entry by entry; what they may not read is left out. So a command run as root under --landlock reads
// /etc as any user could, not /etc/shadow, ssh's host keys or ssl/private: its owner's mode bits say which files
// are secrets, where a list of names would miss the ones it does not know. Links are not followed (a link's target
// is checked by the kernel against the rules of where it lies); FIFOs, sockets and devices are left out.
func ReadableByAll(root string) (dirs, files []string) {
	budget := maxReadableEntries
	var walk func(dir string) (whole bool, dirs, files []string)
	walk = func(dir string) (bool, []string, []string) {
		ents, err := os.ReadDir(dir)
		if err != nil || len(ents) > budget {
			return false, nil, nil
		}
		budget -= len(ents)
		whole := true
		var ds, fls []string
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			info, err := e.Info() // lstat: a link is itself, never its target
			if err != nil {
				whole = false
				continue
			}
			switch mode := info.Mode(); {
			case mode&fs.ModeSymlink != 0:
			case mode.IsDir():
				if mode.Perm()&othersReadDir != othersReadDir {
					whole = false
					continue
				}
				sub, subDirs, subFiles := walk(p)
				if sub {
					ds = append(ds, p)
					continue
				}
				whole = false
				ds, fls = append(ds, subDirs...), append(fls, subFiles...)
			case mode.IsRegular() && mode.Perm()&othersReadFile != 0:
				fls = append(fls, p)
			default: // a secret, or a FIFO, socket or device
				whole = false
			}
		}
		return whole, ds, fls
	}
	info, err := os.Lstat(root)
	if err != nil || !info.IsDir() || info.Mode().Perm()&othersReadDir != othersReadDir {
		return nil, nil
	}
	if whole, ds, fls := walk(root); !whole {
		return ds, fls
	}
	return []string{root}, nil
}
