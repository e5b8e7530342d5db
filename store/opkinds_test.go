package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpKindsListsEvery: OpKinds holds every OpKind constant declared in
// types.go, so that the tables checked against it cover a new kind too.
func TestOpKindsListsEvery(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	require.NoError(t, err)
	var declared []OpKind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "OpKind" {
				continue
			}
			for _, val := range v.Values {
				lit, ok := val.(*ast.BasicLit)
				require.True(t, ok, "OpKind %s is not a string literal", v.Names[0].Name)
				s, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				declared = append(declared, OpKind(s))
			}
		}
	}
	require.NotEmpty(t, declared)
	assert.ElementsMatch(t, declared, OpKinds)
}
