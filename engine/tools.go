package engine

import "github.com/toolgate/toolgate/engine/vocab"

// Kind is the canonical kind of a tool (see package vocab, where the
// kinds and the agents' tool names are defined once).
type Kind = vocab.Kind

// Tool kinds, as defined in package vocab.
const (
	KindUnknown          = vocab.KindUnknown
	KindRead             = vocab.KindRead
	KindSearch           = vocab.KindSearch
	KindMetadata         = vocab.KindMetadata
	KindEdit             = vocab.KindEdit
	KindWrite            = vocab.KindWrite
	KindNotebookEdit     = vocab.KindNotebookEdit
	KindPatch            = vocab.KindPatch
	KindShell            = vocab.KindShell
	KindWebFetch         = vocab.KindWebFetch
	KindWebSearch        = vocab.KindWebSearch
	KindBackgroundOutput = vocab.KindBackgroundOutput
)

// Vocabulary maps tool names to kinds: the built-in table plus aliases.
type Vocabulary = vocab.Vocabulary

// NewVocabulary returns the built-in table extended by aliases.
func NewVocabulary(aliases map[string]Kind) (*Vocabulary, error) { return vocab.New(aliases) }

// ParseKind returns the kind named s (see vocab.ParseKind).
func ParseKind(s string) (Kind, error) { return vocab.ParseKind(s) }
