package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sessionfs/sessionfs/layout"
)

// credentialTables are the tables of opencode's database that hold logins (its console's accounts and tokens).
var credentialTables = []string{"account", "credential", "control_account"}

// scrubWithin bounds an export's scrub of one database.
const scrubWithin = 5 * time.Minute

// Scrub returns the session's opencode database without its logins: a new database of this process's, made
// from the session's (a private copy, opened as untrusted: refused with a view or a trigger) with its tables
// (their SQL checked to be one plain CREATE each) and the rows of every table but the credential tables, which
// stay empty; nothing is deleted from a copy, so no trigger of the session's and no freed page can keep a
// login. The new database is opened again and its credential tables checked empty. dropped names the tables
// that held rows.
func Scrub(sess *layout.Dir) (data []byte, dropped []string, err error) {
	from, remove, err := privateCopy(sess)
	if err != nil {
		return nil, nil, err
	}
	defer remove()
	clean := filepath.Join(filepath.Dir(from), "scrubbed.db")
	if dropped, err = rebuild(from, clean, func(table string) bool { return !slices.Contains(credentialTables, table) }); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	if err := checkScrubbed(clean); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dbRel, err)
	}
	data, err = os.ReadFile(clean)
	return data, dropped, err
}

// rebuild makes the new database dst of the tables and indexes of from (a file of this process's, opened as
// untrusted), and the rows of the tables keep names (by their names in lower case). It returns the tables left
// empty that held rows in from.
func rebuild(from, dst string, keep func(table string) bool) (dropped []string, err error) {
	d, err := openDB(dst, access{create: true, attach: 1, within: scrubWithin})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	src, err := d.attach(from, "src", nil)
	if err != nil {
		return nil, err
	}
	defer d.detach("src")
	var version, app int64
	if err := d.row(`PRAGMA src.user_version`, nil, &version); err != nil {
		return nil, err
	}
	if err := d.row(`PRAGMA src.application_id`, nil, &app); err != nil {
		return nil, err
	}
	err = d.transaction(func() error {
		// Tables first, then their rows, then the indexes (built once, over all the rows).
		for _, o := range src.objects {
			if o.typ != "table" || ours(o.name) {
				continue
			}
			if err := remake(d, o); err != nil {
				return err
			}
			if !keep(lower(o.name)) {
				var n int
				if err := d.row(`SELECT count(*) FROM src.`+quote(o.name), nil, &n); err != nil {
					return err
				}
				if n > 0 {
					dropped = append(dropped, o.name)
				}
				continue
			}
			cols := make([]string, len(src.tables[lower(o.name)]))
			for i, c := range src.tables[lower(o.name)] {
				cols[i] = quote(c)
			}
			list := strings.Join(cols, ", ")
			if err := d.exec(fmt.Sprintf(`INSERT INTO main.%s (%s) SELECT %s FROM src.%s`, quote(o.name), list, list, quote(o.name))); err != nil {
				return fmt.Errorf("copy %s: %w", o.name, err)
			}
		}
		for _, o := range src.objects {
			if o.typ == "index" && o.sql.Valid && o.sql.String != "" {
				if err := remake(d, o); err != nil {
					return err
				}
			}
		}
		if slices.ContainsFunc(src.objects, func(o object) bool { return strings.EqualFold(o.name, "sqlite_sequence") }) {
			if err := d.exec(`INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM src.sqlite_sequence`); err != nil {
				return err
			}
		}
		// Numbers, read as such: never text of the session's.
		if err := d.exec(fmt.Sprintf(`PRAGMA main.user_version = %d`, version)); err != nil {
			return err
		}
		return d.exec(fmt.Sprintf(`PRAGMA main.application_id = %d`, app))
	})
	return dropped, err
}

// remake makes table or index o (of a database vet checked) in main, from its SQL: one statement, a plain
// CREATE of it (createOf), nothing after it.
func remake(d *db, o object) error {
	if !oneStatement(o.sql.String) {
		return fmt.Errorf("%w: the SQL of %s %q holds more than one statement", errRefused, o.typ, o.name)
	}
	if err := d.exec(o.sql.String); err != nil {
		return fmt.Errorf("make %s %s: %w", o.typ, o.name, err)
	}
	return nil
}

// checkScrubbed opens the new database p as untrusted and checks that its credential tables are empty.
func checkScrubbed(p string) error {
	d, err := openDB(p, access{within: scrubWithin})
	if err != nil {
		return err
	}
	defer d.Close()
	for t := range d.schema.tables {
		if !slices.Contains(credentialTables, t) {
			continue
		}
		var n int
		if err := d.row(`SELECT count(*) FROM `+quote(t), nil, &n); err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("%s still holds %d rows once scrubbed", t, n)
		}
	}
	return nil
}
