module txexec

go 1.26.3

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/seccomp/libseccomp-golang v0.11.1
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.49.0
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/time v0.15.0 // indirect
)
