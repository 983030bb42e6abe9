package keepalived

import "fmt"

// Kind says what an Item means for the conversion.
type Kind int

const (
	// Note: converted, with a difference worth knowing.
	Note Kind = iota
	// Warning: converted or dropped, but the operator should check it.
	Warning
	// Unconverted: something keepalived did that the output does not
	// do; it fails the conversion unless partial output is allowed.
	Unconverted
)

func (k Kind) String() string {
	switch k {
	case Note:
		return "note"
	case Warning:
		return "warning"
	}
	return "not converted"
}

// Item is one thing the operator should know about the conversion, at the
// keepalived.conf line it concerns.
type Item struct {
	Pos     Pos
	Kind    Kind
	Message string
}

// String formats the item as FILE:LINE: kind: message.
func (i Item) String() string {
	return fmt.Sprintf("%s: %s: %s", i.Pos, i.Kind, i.Message)
}
