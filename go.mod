module github.com/system3-dev/system3

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/spf13/cobra v1.10.2
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
)
