package agents

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachElement(t *testing.T) {
	for raw, want := range map[string][]string{
		`[]`:           nil,
		` [ ] `:        nil,
		`null`:         nil,
		`"[1,2]"`:      nil,
		`{"a":[1,2]}`:  nil,
		`[1]`:          {`1`},
		"[ 1 ,\n\t2 ]": {`1`, `2`},
		`[{"a":"],[{\"}"},["x",{"b":[]}],"q\\",null,true,-1.5e3]`: {`{"a":"],[{\"}"}`, `["x",{"b":[]}]`, `"q\\"`, `null`, `true`, `-1.5e3`},
	} {
		var got []string
		require.NoError(t, EachElement([]byte(raw), func(el []byte) error {
			got = append(got, string(el))
			return nil
		}))
		assert.Equal(t, want, got, "%s", raw)
	}
}

// A RawRef is the decoded input's own bytes: no copy of a list of a million things.
func TestRawRefIsTheInput(t *testing.T) {
	in := []byte(`{"parts":[{"text":"a"},{"text":"b"}],"n":1}`)
	var v struct {
		Parts RawRef `json:"parts"`
		Gone  RawRef `json:"gone"`
	}
	require.NoError(t, json.Unmarshal(in, &v))
	assert.Equal(t, `[{"text":"a"},{"text":"b"}]`, string(v.Parts))
	assert.Nil(t, v.Gone)
	assert.Equal(t, cap(in)-9, cap(v.Parts), "a part of the input, not a copy")
}

// Gemini's and Qwen's readers take a prompt's words from a list of parts, bounded, and cut where a character ends.
func TestJoinTexts(t *testing.T) {
	raw := []byte(`[{"text":"héllo"},{"functionCall":{}},{"text":"there"}, 3]`)
	assert.Equal(t, "héllo  there ", JoinTexts(raw, -1))
	assert.Equal(t, "h", JoinTexts(raw, 2), "no half of é")
	assert.Equal(t, "", JoinTexts([]byte(`"not a list"`), -1))
	assert.True(t, IsList([]byte(" \n[1]")))
	assert.False(t, IsList([]byte(`{"a":[1]}`)))
	assert.Equal(t, "abc", Cut("abc", 5))
}
