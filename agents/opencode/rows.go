package opencode

import (
	"context"
	"database/sql"
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

// planCopy reads which tables of db (the source) to copy and how.
func planCopy(ctx context.Context, db *sql.DB) ([]tableCopy, error) {
	tables, err := tableNames(ctx, db, "main")
	if err != nil {
		return nil, err
	}
	var plan []tableCopy
	for _, t := range tables {
		if slices.Contains(skipTables, t) {
			continue
		}
		cols, err := columns(ctx, db, t)
		if err != nil {
			return nil, err
		}
		c := tableCopy{table: t, cols: cols}
		switch {
		case t == "session":
			c.where = "id IN (%s)"
		case t == "project":
			c.where, c.keep = "id IN (SELECT project_id FROM src.session WHERE id IN (%s))", true
		case t == "workspace":
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
	return plan, nil
}

// copyRows copies the rows of sessions ids from src (attached) into main, by plan: the source's replace the
// target's of the same key, rows only the target has stay.
func copyRows(ctx context.Context, tx *sql.Tx, plan []tableCopy, ids []string) error {
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
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("copy %s: %w", c.table, err)
		}
	}
	return nil
}

// sameSchema checks that main (the session's database) has the schema of src (attached) and the same migrations
// done: every table, index and trigger as the same SQL. Rows written by another opencode version would not fit.
func sameSchema(ctx context.Context, conn *sql.Conn) error {
	read := func(schema string) (map[string]string, error) {
		// SQLite's own (statistics, indexes of constraints) follow from the rest, or from use.
		rows, err := conn.QueryContext(ctx, `SELECT type, name, coalesce(sql, '') FROM `+schema+
			`.sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var typ, name, text string
			if err := rows.Scan(&typ, &name, &text); err != nil {
				return nil, err
			}
			out[typ+" "+name] = text
		}
		return out, rows.Err()
	}
	mine, err := read("main")
	if err != nil {
		return err
	}
	theirs, err := read("src")
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(theirs)) {
		if text, ok := mine[k]; !ok {
			return fmt.Errorf("the session's has no %s", k)
		} else if text != theirs[k] {
			return fmt.Errorf("their %s differ", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if _, ok := theirs[k]; !ok {
			return fmt.Errorf("the session's has a %s more", k)
		}
	}
	if _, ok := theirs["table migration"]; !ok {
		return nil // no bookkeeping to compare (the schemas are the same)
	}
	a, err := column(ctx, conn, `SELECT id FROM main.migration ORDER BY id`)
	if err != nil {
		return err
	}
	b, err := column(ctx, conn, `SELECT id FROM src.migration ORDER BY id`)
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

// tableNames lists the tables of schema in db, SQLite's own left out.
func tableNames(ctx context.Context, db *sql.DB, schema string) ([]string, error) {
	return column(ctx, db, `SELECT name FROM `+schema+`.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
}

// columns lists table's columns in db, in order.
func columns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	out, err := column(ctx, db, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err == nil && len(out) == 0 {
		return nil, fmt.Errorf("table %s: no columns", table)
	}
	return out, err
}

// querier is a database, one of its connections or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// column reads the one text column of what query returns, row by row.
func column(ctx context.Context, db querier, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// quote makes name an SQL identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
