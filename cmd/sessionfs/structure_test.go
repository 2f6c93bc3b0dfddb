package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxRunLines bounds a command's RunE (or Run) closure: flags checked, then one call into a named function or the
// library, as restic's and rclone's commands are. The work is then readable, testable and findable by its name.
const maxRunLines = 30

// Every cobra.Command's RunE closure in this package is at most maxRunLines long.
func TestRunEIsShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			for _, run := range runClosures(n) {
				checked++
				if lines := fset.Position(run.fn.End()).Line - fset.Position(run.fn.Pos()).Line + 1; lines > maxRunLines {
					t.Errorf("%s: the %s of %q is %d lines (at most %d: move the work into a named function)",
						fset.Position(run.fn.Pos()), run.field, run.use, lines, maxRunLines)
				}
			}
			return true
		})
	}
	require.Positive(t, checked, "no RunE found: the test no longer sees the commands")
}

// runClosure is a command's RunE or Run given as a function literal.
type runClosure struct {
	use   string // the command's Use, or what it was assigned to
	field string // RunE or Run
	fn    *ast.FuncLit
}

// runClosures are the Run and RunE closures n sets: the fields of a cobra.Command literal, or an assignment
// (cmd.RunE = func...).
func runClosures(n ast.Node) []runClosure {
	var out []runClosure
	switch n := n.(type) {
	case *ast.CompositeLit:
		if sel, ok := n.Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Command" {
			return nil
		}
		use := "?"
		for _, e := range n.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Use") {
				if lit, ok := kv.Value.(*ast.BasicLit); ok {
					use, _ = strconv.Unquote(lit.Value)
				}
			}
		}
		for _, e := range n.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if fn, ok := kv.Value.(*ast.FuncLit); ok && (isIdent(kv.Key, "RunE") || isIdent(kv.Key, "Run")) {
				out = append(out, runClosure{use: strings.Fields(use + " ?")[0], field: kv.Key.(*ast.Ident).Name, fn: fn})
			}
		}
	case *ast.AssignStmt:
		for i, lhs := range n.Lhs {
			sel, ok := lhs.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "RunE" && sel.Sel.Name != "Run") || i >= len(n.Rhs) {
				continue
			}
			if fn, ok := n.Rhs[i].(*ast.FuncLit); ok {
				out = append(out, runClosure{use: assignedTo(sel.X), field: sel.Sel.Name, fn: fn})
			}
		}
	}
	return out
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// assignedTo names what a RunE was assigned to (cmd in cmd.RunE).
func assignedTo(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
