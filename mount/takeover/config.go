package takeover

import "encoding/json"

// Config is a held mount's configuration as its helper was given it (selfexec.HelperEnv's JSON, package mount's):
// the holder reads the mount's places and its options, and hands the whole on, as it was, to the binary it becomes
// (an upgrade) or to the holder it moves to.
type Config struct {
	Store, Mountpoint string
	// Takeover is the mount's options (package mount's Options), handed to each daemon that takes over; none: the
	// mount is not held.
	Takeover json.RawMessage
	whole    map[string]json.RawMessage
}

// UnmarshalJSON keeps every field, those the holder does not read too.
func (c *Config) UnmarshalJSON(b []byte) error {
	var whole map[string]json.RawMessage
	if err := json.Unmarshal(b, &whole); err != nil {
		return err
	}
	var known struct {
		Store, Mountpoint string
		Takeover          json.RawMessage
	}
	if err := json.Unmarshal(b, &known); err != nil {
		return err
	}
	if string(known.Takeover) == "null" {
		known.Takeover = nil
	}
	*c = Config{Store: known.Store, Mountpoint: known.Mountpoint, Takeover: known.Takeover, whole: whole}
	return nil
}

// MarshalJSON is the configuration as it was given, with the fields the holder reads as they are now.
func (c Config) MarshalJSON() ([]byte, error) {
	whole := make(map[string]json.RawMessage, len(c.whole)+3)
	for k, v := range c.whole {
		whole[k] = v
	}
	for k, v := range map[string]any{"Store": c.Store, "Mountpoint": c.Mountpoint} {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		whole[k] = b
	}
	whole["Takeover"] = json.RawMessage("null")
	if len(c.Takeover) > 0 {
		whole["Takeover"] = c.Takeover
	}
	return json.Marshal(whole)
}
