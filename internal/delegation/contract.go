package delegation

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Bounds of contracts, results and the problems Validate reports.
const (
	MaxContract = store.MaxDelegationContract
	MaxResult   = store.MaxDelegationResult
	// MaxProblems bounds the problems of one result; the last says how
	// many more there were.
	MaxProblems = 20
	// MaxProblemText bounds a problem's location and its message, each.
	MaxProblemText = 200
	// maxCompileError bounds the text of a refused schema's error.
	maxCompileError = 1024
)

// contractURL is the base URL a contract is compiled at. Nothing is ever
// fetched from it: a reference that resolves outside the document (to
// it, to any http(s) URL or to a file) goes to refuseLoader.
const (
	contractBase = "https://contract.jam.invalid/"
	contractURL  = contractBase + "schema.json"
)

// draft2020 is the only $schema a contract may name.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

//go:embed contracts/review.json contracts/test.json
var builtinFS embed.FS

// Contract is a compiled result contract: a JSON Schema 2020-12 document
// and the name it goes by (store.ContractReview, store.ContractTest or
// store.ContractCustom).
type Contract struct {
	Name   string
	Doc    []byte
	schema *jsonschema.Schema
}

// Builtin returns the built-in contract of that name (review, test).
func Builtin(name string) (*Contract, error) {
	if name != store.ContractReview && name != store.ContractTest {
		return nil, fmt.Errorf("%w: no built-in contract %q (want review or test)", jam.ErrInvalid, clip(name, 64))
	}
	doc, err := builtinFS.ReadFile("contracts/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("contract %s: %w", name, err)
	}
	return Compile(name, doc)
}

// Compile compiles doc as the contract called name: the document as
// stored with a delegation (a built-in one keeps the schema it was
// created with). A document that is not a JSON object of at most
// MaxContract bytes, names a $schema other than 2020-12's, is not a valid
// schema, or refers to anything outside itself (a $ref to an http(s) URL
// or a file) is jam.ErrInvalid.
func Compile(name string, doc []byte) (*Contract, error) {
	if name != store.ContractReview && name != store.ContractTest && name != store.ContractCustom {
		return nil, fmt.Errorf("%w: unknown contract name %q (want review, test or custom)", jam.ErrInvalid, clip(name, 64))
	}
	if len(doc) > MaxContract {
		return nil, fmt.Errorf("%w: the contract is %d bytes (at most %d)", jam.ErrInvalid, len(doc), MaxContract)
	}
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: the contract is not UTF-8", jam.ErrInvalid)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: the contract is not JSON: %s", jam.ErrInvalid, clip(err.Error(), maxCompileError))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the contract is not a JSON object", jam.ErrInvalid)
	}
	if s, ok := obj["$schema"]; ok && s != draft2020 && s != draft2020+"#" {
		return nil, fmt.Errorf("%w: the contract's $schema is not %s", jam.ErrInvalid, draft2020)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(contractURL, v); err != nil {
		return nil, fmt.Errorf("%w: the contract: %s", jam.ErrInvalid, clip(err.Error(), maxCompileError))
	}
	sch, err := c.Compile(contractURL)
	if err != nil {
		return nil, fmt.Errorf("%w: the contract is not a valid JSON Schema 2020-12: %s", jam.ErrInvalid, clip(compileError(err), maxCompileError))
	}
	return &Contract{Name: name, Doc: bytes.Clone(doc), schema: sch}, nil
}

// errRemote is why refuseLoader loads nothing.
var errRemote = errors.New("a contract may not refer to anything outside itself")

// refuseLoader loads no URL: a contract is one self-contained document.
// (The 2020-12 meta-schemas, which the compiler holds itself, are never
// asked of it.)
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errRemote }

// compileError is err's text without the contract's made-up URL.
func compileError(err error) string {
	return strings.ReplaceAll(strings.ReplaceAll(err.Error(), contractURL, ""), contractBase, "")
}

// Problem is one way a result breaks its contract: where (a JSON pointer
// into the result, "" for the whole of it) and what.
type Problem struct {
	Location string `json:"location"`
	Message  string `json:"message"`
}

// String is the problem as a model reads it: "/findings/0/line: must be
// >= 1, got 0".
func (p Problem) String() string {
	loc := p.Location
	if loc == "" {
		loc = "(the result)"
	}
	return loc + ": " + p.Message
}

// printer renders the validator's messages.
var printer = message.NewPrinter(language.English)

// Validate checks result against c and returns what is wrong with it, at
// most MaxProblems problems of at most MaxProblemText bytes each, or none
// when it satisfies c. A result must be a JSON object of at most
// MaxResult bytes in UTF-8.
func Validate(c *Contract, result json.RawMessage) []Problem {
	if len(result) > MaxResult {
		return []Problem{{Message: fmt.Sprintf("the result is %d bytes (at most %d)", len(result), MaxResult)}}
	}
	if !utf8.Valid(result) {
		return []Problem{{Message: "the result is not UTF-8"}}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(result))
	if err != nil {
		return []Problem{{Message: clip("not JSON: "+err.Error(), MaxProblemText)}}
	}
	if _, ok := v.(map[string]any); !ok {
		return []Problem{{Message: "must be a JSON object, got " + jsonKind(v)}}
	}
	err = c.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Message: clip(err.Error(), MaxProblemText)}}
	}
	var out []Problem
	more := 0
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(out) == MaxProblems {
			more++
			return
		}
		out = append(out, Problem{Location: clip(pointer(e.InstanceLocation), MaxProblemText), Message: clip(describe(e.ErrorKind), MaxProblemText)})
	}
	walk(ve)
	if more > 0 {
		out[len(out)-1] = Problem{Message: fmt.Sprintf("and %d more problems", more+1)}
	}
	if len(out) == 0 {
		out = []Problem{{Message: clip(describe(ve.ErrorKind), MaxProblemText)}}
	}
	return out
}

// describe words a failed keyword for a reader who wrote the result.
func describe(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return "must be >= " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.Maximum:
		return "must be <= " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.ExclusiveMinimum:
		return "must be > " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.ExclusiveMaximum:
		return "must be < " + k.Want.RatString() + ", got " + k.Got.RatString()
	case *kind.Type:
		return "must be " + strings.Join(k.Want, " or ") + ", got " + k.Got
	case *kind.MinLength:
		return "must be at least " + strconv.Itoa(k.Want) + " characters, got " + strconv.Itoa(k.Got)
	case *kind.MaxLength:
		return "must be at most " + strconv.Itoa(k.Want) + " characters, got " + strconv.Itoa(k.Got)
	case *kind.MaxItems:
		return "must have at most " + strconv.Itoa(k.Want) + " items, got " + strconv.Itoa(k.Got)
	case *kind.MinItems:
		return "must have at least " + strconv.Itoa(k.Want) + " items, got " + strconv.Itoa(k.Got)
	case *kind.FalseSchema:
		return "is not allowed"
	}
	return k.LocalizedString(printer)
}

// pointer is the JSON pointer of an instance location ("" for the root).
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// clip bounds s to n bytes, cut at a rune boundary and marked with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
