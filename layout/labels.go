package layout

import (
	"fmt"
	"strings"

	"github.com/sessionfs/sessionfs/internal/lazyregexp"
)

// Labels follow Kubernetes' rule, which people who label things already know (and which keeps ls, --filter and
// --format simple: no commas, spaces or newlines): a key is a name of at most 63 characters of [A-Za-z0-9-_.],
// beginning and ending with a letter or digit, with an optional DNS-subdomain prefix and "/" (example.com/team);
// a value is empty or a name of the same shape.
var (
	labelName   = lazyregexp.New(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	labelPrefix = lazyregexp.New(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// KeyRule and ValueRule say what ValidateLabel takes of a key and of a value, for error messages; LabelRule says
// both, for help.
const (
	KeyRule = "a key is up to 63 characters of letters, digits, '-', '_' and '.', starting and ending with a " +
		"letter or digit, optionally after a DNS prefix and '/' (example.com/team)"
	ValueRule = "a value is empty, or up to 63 characters of letters, digits, '-', '_' and '.', starting and " +
		"ending with a letter or digit (no spaces, commas or '/')"
	LabelRule = KeyRule + "; " + ValueRule
)

// ValidateLabel checks a label's key and value against Kubernetes' rule; its error says the rule of the part
// that broke it.
func ValidateLabel(key, value string) error {
	name := key
	if prefix, rest, ok := strings.Cut(key, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !labelPrefix.MatchString(prefix) {
			return fmt.Errorf("label key %s: its prefix is not a DNS subdomain (%s)", printable(key), KeyRule)
		}
		name = rest
	}
	if !labelName.MatchString(name) {
		return fmt.Errorf("label key %s: %s", printable(key), KeyRule)
	}
	if value != "" && !labelName.MatchString(value) {
		return fmt.Errorf("label %s's value %s: %s", printable(key), printable(value), ValueRule)
	}
	return nil
}

// EditLabels sets the labels of set and removes those of unset (removals first), refusing more than MaxLabels; a
// session left with none has nil. The keys and values are checked by the caller (ValidateLabel), removals taken
// whatever they are: a key set before the rule may go.
func (m *Meta) EditLabels(set map[string]string, unset []string) error {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	for _, k := range unset {
		delete(m.Labels, k)
	}
	for k, v := range set {
		if _, ok := m.Labels[k]; !ok && len(m.Labels) >= MaxLabels {
			return fmt.Errorf("label %s: a session has at most %d labels", m.ID, MaxLabels)
		}
		m.Labels[k] = v
	}
	if len(m.Labels) == 0 {
		m.Labels = nil
	}
	return nil
}
