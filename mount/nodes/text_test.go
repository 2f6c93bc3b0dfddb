package nodes

import "testing"

func TestFileNameRefusesWhatCannotNameAFile(t *testing.T) {
	for id, want := range map[string]bool{
		"2fe2d21b-be8f-4b12-b46b-12e68f6e9f01": true,
		"ses_7a1b":                             true,
		"café":                                 true,
		"":                                     false,
		".":                                    false,
		"..":                                   false,
		"a/b":                                  false,
		"a\x00b":                               false,
		"a\nb":                                 false,
		"\x1b]52;c;x\a":                        false,
		"a\u0085b":                             false,
		"\xff":                                 false,
		string(make([]byte, 251)):              false,
	} {
		if got := fileName(id); got != want {
			t.Errorf("fileName(%q) = %v, want %v", id, got, want)
		}
	}
}
