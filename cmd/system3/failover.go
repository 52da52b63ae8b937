package main

import (
	"github.com/system3-dev/system3/cmd/system3/internal/core"
	"github.com/system3-dev/system3/monitor/api"
)

var _ api.Service = (*core.Failover)(nil)
