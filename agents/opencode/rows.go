package opencode

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// What an import copies of a conversation, table by table, read from the source's schema: its sessions (its own
// and its subagents'), the rows of every table keyed by their session (session_id: messages, parts, todos,
// inputs...; aggregate_id: the event log and its sequence), and the project and workspace they belong to, kept
// as the session has them if it has them already. Left out: logins, a share's secret, opencode's migration
// bookkeeping (the session's own), and what belongs to no conversation (a project's permissions and folders).
var skipTables = append([]string{"account_state", "session_share", "migration", "data_migration"}, credentialTables...)

// tableCopy copies one table's rows of the sessions imported.
type tableCopy struct {
	table string
	cols  []string
	where string // the rows of the sessions ? (one per id), over src's tables
	keep  bool   // a row the target has already stays as it is (a project, a workspace)
}

// planCopy reads which tables of d (the source) to copy and how.
func planCopy(d *db) []tableCopy {
	var plan []tableCopy
	for _, t := range slices.Sorted(maps.Keys(d.schema.tables)) {
		if slices.Contains(skipTables, t) {
			continue
		}
		cols := d.schema.tables[t]
		c := tableCopy{table: t, cols: cols}
		switch {
		case t == "session":
			c.where = "id IN (%s)"
		case t == "project":
			c.where, c.keep = "id IN (SELECT project_id FROM src.session WHERE id IN (%s))", true
		case t == "workspace" && slices.Contains(d.schema.tables["session"], "workspace_id"):
			c.where, c.keep = "id IN (SELECT workspace_id FROM src.session WHERE id IN (%s))", true
		case slices.Contains(cols, "aggregate_id"):
			c.where = "aggregate_id IN (%s)"
		case slices.Contains(cols, "session_id"):
			c.where = "session_id IN (%s)"
		default:
			continue
		}
		plan = append(plan, c)
	}
	return plan
}

// copyRows copies the rows of sessions ids from src (attached) into main, by plan: the source's replace the
// target's of the same key, rows only the target has stay.
func copyRows(d *db, plan []tableCopy, ids []string) error {
	marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	for _, c := range plan {
		verb := "INSERT OR REPLACE"
		if c.keep {
			verb = "INSERT OR IGNORE"
		}
		cols := make([]string, len(c.cols))
		for i, col := range c.cols {
			cols[i] = quote(col)
		}
		list := strings.Join(cols, ", ")
		q := fmt.Sprintf("%s INTO main.%s (%s) SELECT %s FROM src.%s WHERE %s", verb, quote(c.table), list, list,
			quote(c.table), fmt.Sprintf(c.where, marks))
		if err := d.exec(q, args...); err != nil {
			return fmt.Errorf("copy %s: %w", c.table, err)
		}
	}
	return nil
}

// sameSchema checks that main (the session's database, d) has the schema of theirs (attached as src) and the
// same migrations done: every table and index as the same SQL (vet let no other object in). Rows written by
// another opencode version would not fit.
func sameSchema(d *db, theirs vetted) error {
	read := func(sc vetted) map[string]string {
		out := map[string]string{}
		for _, o := range sc.objects {
			if strings.HasPrefix(lower(o.name), "sqlite_stat") {
				continue // statistics: from use, not from the version
			}
			out[o.typ+" "+lower(o.name)] = o.sql.String
		}
		return out
	}
	mine, their := read(d.schema), read(theirs)
	for _, k := range slices.Sorted(maps.Keys(their)) {
		if text, ok := mine[k]; !ok {
			return fmt.Errorf("the session's has no %s", k)
		} else if text != their[k] {
			return fmt.Errorf("their %s differ", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if _, ok := their[k]; !ok {
			return fmt.Errorf("the session's has a %s more", k)
		}
	}
	if _, ok := theirs.tables["migration"]; !ok {
		return nil // no bookkeeping to compare (the schemas are the same)
	}
	a, err := d.column(`SELECT id FROM main.migration ORDER BY id`)
	if err != nil {
		return err
	}
	b, err := d.column(`SELECT id FROM src.migration ORDER BY id`)
	if err != nil {
		return err
	}
	for _, id := range append(slices.Clone(a), b...) {
		if slices.Contains(a, id) != slices.Contains(b, id) {
			return fmt.Errorf("migration %s is done in one only", id)
		}
	}
	return nil
}

// quote makes name an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
