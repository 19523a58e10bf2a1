package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// Model selection. An agent says which models a session may use in what
// session/new and session/load return: the protocol's session
// configuration options (an option of category "model", set with
// session/set_config_option), or, in agents that predate them, a models
// object (set with the unstable session/set_model). A configured model the
// agent does not offer, or an agent that offers no choice at all, fails
// the session's setup with an error that names the model and what the
// agent offers: running the turn on some other model would answer with a
// model nobody asked for, and nothing would say so.

// ConfigCategoryModel is the category of the configuration option that
// selects a session's model.
const ConfigCategoryModel = "model"

// SessionSetup is the part of a session/new or session/load result that
// model selection reads. Both fields stay raw until a model is wanted, so
// that an agent's unusual options never fail a session that sets none.
type SessionSetup struct {
	ConfigOptions json.RawMessage `json:"configOptions,omitempty"`
	Models        json.RawMessage `json:"models,omitempty"`
}

// ConfigOption is one session configuration option.
type ConfigOption struct {
	// ID names the option when it is set ("configId" in later drafts of
	// the protocol).
	ID       string `json:"id"`
	ConfigID string `json:"configId,omitempty"`
	Name     string `json:"name"`
	Category string `json:"category,omitempty"`
	// Type is "select" (a value id) or "boolean".
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue"`
	// Options are the values of a select: a list of values, or a list of
	// groups of values.
	Options json.RawMessage `json:"options,omitempty"`
}

// id is the option's identifier under either spelling.
func (o ConfigOption) id() string {
	if o.ID != "" {
		return o.ID
	}
	return o.ConfigID
}

// configValue is one value of a select option, or a group of them.
type configValue struct {
	Value   string        `json:"value"`
	Name    string        `json:"name"`
	Group   string        `json:"group,omitempty"`
	Options []configValue `json:"options,omitempty"`
}

// Values lists the value ids a select option offers, groups flattened, in
// the agent's order.
func (o ConfigOption) Values() ([]string, error) {
	if len(bytes.TrimSpace(o.Options)) == 0 || string(bytes.TrimSpace(o.Options)) == "null" {
		return nil, nil
	}
	var vs []configValue
	if err := json.Unmarshal(o.Options, &vs); err != nil {
		return nil, fmt.Errorf("options of %q: %w", o.id(), err)
	}
	var out []string
	for _, v := range vs {
		if v.Group != "" || v.Options != nil {
			for _, g := range v.Options {
				out = append(out, g.Value)
			}
			continue
		}
		out = append(out, v.Value)
	}
	return out, nil
}

// Current is the option's current value of a select ("" otherwise).
func (o ConfigOption) Current() string {
	var s string
	if json.Unmarshal(o.CurrentValue, &s) != nil {
		return ""
	}
	return s
}

// ModelState is the models object of agents that predate configuration
// options.
type ModelState struct {
	AvailableModels []ModelInfo `json:"availableModels"`
	CurrentModelID  string      `json:"currentModelId"`
}

// ModelInfo is one model such an agent offers.
type ModelInfo struct {
	ModelID string `json:"modelId"`
	Name    string `json:"name"`
}

// SetConfigOptionParams sets a session configuration option.
type SetConfigOptionParams struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     string `json:"value"`
}

// SetConfigOptionResult is the session's configuration afterwards.
type SetConfigOptionResult struct {
	ConfigOptions json.RawMessage `json:"configOptions,omitempty"`
}

// SetModelParams selects a session's model the older way.
type SetModelParams struct {
	SessionID string `json:"sessionId"`
	ModelID   string `json:"modelId"`
}

// ModelChoice is how to put a session on a model: nothing to do when the
// agent already runs it (Method ""), else one request.
type ModelChoice struct {
	Method string
	// ConfigID is the option to set (session/set_config_option).
	ConfigID string
	// Offered is what the agent offers, for messages.
	Offered []string
}

// ChooseModel decides, from what a session's setup returned, how to put
// the session on model. A configuration option of category model wins
// over the older models object. An agent that offers neither is
// jam.ErrNotImplemented; a model it does not offer is jam.ErrInvalid; the
// errors name the model and what is offered.
func ChooseModel(setup SessionSetup, model string) (ModelChoice, error) {
	if opts := bytes.TrimSpace(setup.ConfigOptions); len(opts) > 0 && string(opts) != "null" {
		var options []ConfigOption
		if err := json.Unmarshal(opts, &options); err != nil {
			return ModelChoice{}, fmt.Errorf("%w: the agent's session configuration options: %v", jam.ErrInvalid, err)
		}
		for _, o := range options {
			if o.Category != ConfigCategoryModel || o.Type != "select" || o.id() == "" {
				continue
			}
			values, err := o.Values()
			if err != nil {
				return ModelChoice{}, fmt.Errorf("%w: the agent's model option: %v", jam.ErrInvalid, err)
			}
			c := ModelChoice{Method: MethodSessionSetConfigOption, ConfigID: o.id(), Offered: values}
			if !slices.Contains(values, model) {
				return c, unknownModel(model, values)
			}
			if o.Current() == model {
				c.Method = ""
			}
			return c, nil
		}
	}
	if ms := bytes.TrimSpace(setup.Models); len(ms) > 0 && string(ms) != "null" {
		var state ModelState
		if err := json.Unmarshal(ms, &state); err != nil {
			return ModelChoice{}, fmt.Errorf("%w: the agent's models: %v", jam.ErrInvalid, err)
		}
		c := ModelChoice{Method: MethodSessionSetModel}
		for _, m := range state.AvailableModels {
			c.Offered = append(c.Offered, m.ModelID)
		}
		if !slices.Contains(c.Offered, model) {
			return c, unknownModel(model, c.Offered)
		}
		if state.CurrentModelID == model {
			c.Method = ""
		}
		return c, nil
	}
	return ModelChoice{}, fmt.Errorf("%w: model %q is configured, but the agent offers no model selection (no session configuration option of category model, no models)",
		jam.ErrNotImplemented, model)
}

func unknownModel(model string, offered []string) error {
	list := "nothing"
	if len(offered) > 0 {
		const most = 20
		shown := offered
		if len(shown) > most {
			shown = shown[:most]
		}
		list = strings.Join(shown, ", ")
		if len(offered) > most {
			list += fmt.Sprintf(" and %d more", len(offered)-most)
		}
	}
	return fmt.Errorf("%w: the agent does not offer model %q (it offers %s)", jam.ErrInvalid, model, list)
}
