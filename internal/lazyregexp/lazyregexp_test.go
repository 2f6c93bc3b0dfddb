package lazyregexp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompiledOnFirstUseAndMatchesAsRegexp(t *testing.T) {
	r := &Regexp{str: `^a(\d+)$`} // as New makes it outside a test binary
	assert.Nil(t, r.rx, "nothing compiled before the first use")
	assert.True(t, r.MatchString("a12"))
	require.NotNil(t, r.rx)
	assert.Equal(t, []string{"a34", "34"}, r.FindStringSubmatch("a34"))
	assert.Equal(t, [][]byte{[]byte("a5"), []byte("5")}, r.FindSubmatch([]byte("a5")))
	assert.Equal(t, []int{0, 2}, r.FindStringIndex("a7"))
	assert.Equal(t, "b", r.ReplaceAllString("a9", "b"))
	assert.Equal(t, `^a(\d+)$`, r.String())
}

func TestNewCompilesAtOnceInATestBinary(t *testing.T) {
	require.True(t, inTest)
	assert.NotNil(t, New(`x`).rx)
	assert.Panics(t, func() { New(`(`) }, "a bad pattern fails where it is declared")
}
