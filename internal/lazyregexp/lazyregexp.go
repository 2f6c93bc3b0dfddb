// Package lazyregexp is a regexp compiled on its first use, not at start-up: every command of the one sessionfs
// binary would otherwise compile every package's patterns before it does anything (a few milliseconds of each
// `sessionfs ls`). The same idea as the Go toolchain's internal/lazyregexp.
package lazyregexp

import (
	"os"
	"regexp"
	"strings"
	"sync"
)

// Regexp is a regexp.Regexp compiled when first used.
type Regexp struct {
	str  string
	once sync.Once
	rx   *regexp.Regexp
}

// New is regexp.MustCompile(str), compiled on first use; in a test binary it is compiled at once, so a bad
// pattern fails every test of its package rather than the one that first uses it.
func New(str string) *Regexp {
	r := &Regexp{str: str}
	if inTest {
		r.re()
	}
	return r
}

var inTest = len(os.Args) > 0 && strings.HasSuffix(strings.TrimSuffix(os.Args[0], ".exe"), ".test")

func (r *Regexp) re() *regexp.Regexp {
	r.once.Do(func() { r.rx = regexp.MustCompile(r.str) })
	return r.rx
}

func (r *Regexp) MatchString(s string) bool                { return r.re().MatchString(s) }
func (r *Regexp) FindStringSubmatch(s string) []string     { return r.re().FindStringSubmatch(s) }
func (r *Regexp) FindSubmatch(b []byte) [][]byte           { return r.re().FindSubmatch(b) }
func (r *Regexp) FindStringIndex(s string) []int           { return r.re().FindStringIndex(s) }
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }
func (r *Regexp) String() string                           { return r.str }
