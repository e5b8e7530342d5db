// Command gentxexecdocs writes txexec's man page and bash completion from
// the option and subcommand tables of internal/cli.
//
// Run it from the repository root after changing internal/cli (make docs
// does):
//
//	go run ./cmd/gentxexecdocs
//
// cli.TestGeneratedFilesAreCurrent fails while the files are stale.
package main

import (
	"flag"
	"fmt"
	"os"

	"txexec/internal/cli"
)

func main() {
	man := flag.String("man", cli.ManPath, "man page output file")
	completion := flag.String("completion", cli.CompletionPath, "bash completion output file")
	flag.Parse()
	for _, f := range []struct{ path, text string }{
		{*man, cli.Man()},
		{*completion, cli.BashCompletion()},
	} {
		if err := os.WriteFile(f.path, []byte(f.text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "gentxexecdocs: %v\n", err)
			os.Exit(1)
		}
	}
}
