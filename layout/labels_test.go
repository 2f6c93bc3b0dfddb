package layout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateLabel(t *testing.T) {
	for _, ok := range [][2]string{{"team", "web"}, {"stage", ""}, {"example.com/team", "a.b_c-d"}, {"a", strings.Repeat("v", 63)}} {
		assert.NoError(t, ValidateLabel(ok[0], ok[1]), "%q=%q", ok[0], ok[1])
	}
	for _, bad := range [][2]string{{"a,b", "x"}, {"has space", "x"}, {"k", "two\nlines"}, {"k", "a,b"}, {"k", strings.Repeat("v", 5000)},
		{strings.Repeat("k", 64), ""}, {"-k", ""}, {"k-", ""}, {"/k", ""}, {"Example.com/k", ""}, {"k", "-v"}, {"k", "v w"}} {
		assert.Error(t, ValidateLabel(bad[0], bad[1]), "%q=%q", bad[0], bad[1])
	}
}
