package opencode

import (
	"os"
	"path/filepath"

	"github.com/sessionfs/sessionfs/layout"
)

// ReadColumn reads the values of one text column of a table of the SQLite database base in dir (a folder of a
// session), as every database a session wrote is read: a private copy made by descriptor (snapshot: its header
// checked, its log with it, within maxCopy), opened as untrusted and read only (openDB: a trigger is allowed, as
// one never fires on a read and the authorizer denies whatever one compiles), under a deadline and the row cap.
// It is this opener's read for the other agents' databases (Codex's state index). fs.ErrNotExist when there is no
// database.
func ReadColumn(dir *layout.Dir, base, table, column string) ([]string, error) {
	if err := regular(dir, base); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sessionfs-db-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := snapshot(dir, base, tmp, maxCopy); err != nil {
		return nil, err
	}
	d, err := openDB(filepath.Join(tmp, base), access{within: listWithin, triggers: true,
		tables: map[string][]string{lower(table): {lower(column)}}})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.column(`SELECT ` + quote(column) + ` FROM ` + quote(table))
}
